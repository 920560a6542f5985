package remote

import (
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/canonjson"
)

// Drift is one way a server's tool differs from its pinned manifest.
type Drift struct {
	Tool   string      // the manifest's tool name
	Server string      // the server's name in the configuration
	Remote string      // the tool's name on the server
	Pos    toolreg.Pos // where the manifest declares the tool
	// Field is the manifest's field that differs, such as "description" or
	// "params.limit.maximum"; "" when the server does not serve the tool at
	// all, or serves it in a form a manifest cannot hold.
	Field string
	// Pinned and Served are the two values, cut to a readable length around
	// their first difference; "(absent)" where one side has none.
	Pinned, Served string
}

func (d Drift) String() string {
	p := toolreg.Problem{Pos: d.Pos, Tool: d.Tool, Path: d.Field}
	switch {
	case d.Field == "" && d.Served == "":
		p.Message = fmt.Sprintf("server %q does not serve tool %q", d.Server, d.Remote)
	case d.Field == "":
		p.Message = fmt.Sprintf("server %q serves tool %q in a form a manifest cannot hold: %s", d.Server, d.Remote, d.Served)
	default:
		p.Message = fmt.Sprintf("pinned %s, server %q serves %s", d.Pinned, d.Server, d.Served)
	}
	return p.String()
}

// DriftError is Connect's refusal to start: every pinned tool whose server
// serves something other than its manifest, all at once, with the fix.
type DriftError struct {
	Drifts []Drift
}

func (e *DriftError) Error() string {
	var b strings.Builder
	servers := map[string]bool{}
	for _, d := range e.Drifts {
		servers[d.Server] = true
	}
	fmt.Fprintf(&b, "remote: %d pinned tool contract(s) differ from what the servers serve:", len(e.Drifts))
	for _, d := range e.Drifts {
		b.WriteString("\n\t")
		b.WriteString(d.String())
	}
	names := make([]string, 0, len(servers))
	for s := range servers {
		names = append(names, s)
	}
	sort.Strings(names)
	b.WriteString("\nfix: re-pin (toolreg pin ")
	b.WriteString(strings.Join(names, ", toolreg pin "))
	b.WriteString("), review the diff (toolreg diff), and restart; nothing of these servers is offered until then")
	return b.String()
}

func (e *DriftError) Is(target error) bool { return target == toolreg.ErrTool }

// compare returns the drifts of the served tool s from the manifest spec:
// every field of the pinned contract, each once.
func compare(spec *toolreg.Spec, s *served) []Drift {
	if same(spec, s) {
		return nil // the common case, at startup: no field to list
	}
	pinned, got := flatten(spec), flatten(toSpec(spec, s))
	var ds []Drift
	keys := make([]string, 0, len(pinned)+len(got))
	for k := range pinned {
		keys = append(keys, k)
	}
	for k := range got {
		if _, ok := pinned[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	done := map[string]bool{} // schemas reported whole, as declared on one side only
	for _, k := range keys {
		a, aok := pinned[k]
		b, bok := got[k]
		if aok && bok && a.cmp == b.cmp {
			continue
		}
		// A schema one side does not declare is one drift, at the schema.
		if at, ok := declaredOnOneSide(k, pinned, got); ok {
			if !done[at] {
				done[at] = true
				ds = append(ds, drift(spec, at, declared(pinned, at), declared(got, at)))
			}
			continue
		}
		pa, pb := "(absent)", "(absent)"
		if aok {
			pa, pb = excerpt(a.show, b.show, bok)
		} else {
			pb = cut(b.show, 96)
		}
		if !aok {
			pa = "(absent)"
		}
		if !bok {
			pb = "(absent)"
		}
		ds = append(ds, drift(spec, k, pa, pb))
	}
	return ds
}

func drift(spec *toolreg.Spec, field, pinned, served string) Drift {
	return Drift{Tool: spec.Name, Server: spec.Remote.Server, Remote: spec.Remote.Tool, Pos: spec.Pos, Field: field, Pinned: pinned, Served: served}
}

// declaredOnOneSide returns the outermost schema path above key k that one
// side declares and the other does not.
func declaredOnOneSide(k string, a, b map[string]value) (string, bool) {
	parts := strings.Split(k, ".")
	for i := 2; i <= len(parts); i++ {
		at := strings.Join(parts[:i], ".")
		_, aok := a[at+".type"]
		_, bok := b[at+".type"]
		if aok != bok {
			return at, true
		}
	}
	return "", false
}

func declared(m map[string]value, at string) string {
	if t, ok := m[at+".type"]; ok {
		return "a " + t.show + " value"
	}
	return "(absent)"
}

// value is one flattened field: cmp compares, show is what a person reads.
type value struct{ cmp, show string }

// flatten lists the pinned contract of spec field by field: description,
// remote's title and read_only_hint, annotations, params and returns. Name,
// side_effect, tags, keywords, approval and strict are the manifest's own
// decisions and are left out.
func flatten(spec *toolreg.Spec) map[string]value {
	m := map[string]value{}
	str := func(k, v string) {
		if v != "" {
			m[k] = value{v, strconv.Quote(v)}
		}
	}
	flag := func(k string, v *bool) {
		if v != nil {
			s := strconv.FormatBool(*v)
			m[k] = value{s, s}
		}
	}
	str("description", spec.Description)
	if r := spec.Remote; r != nil {
		str("remote.title", r.Title)
		if r.ReadOnlyHint {
			t := true
			flag("remote.read_only_hint", &t)
		}
	}
	if a := spec.Annotations; a != nil {
		str("annotations.title", a.Title)
		flag("annotations.destructiveHint", a.DestructiveHint)
		if a.IdempotentHint != nil && *a.IdempotentHint {
			flag("annotations.idempotentHint", a.IdempotentHint) // MCP's false and absent are one
		}
		flag("annotations.openWorldHint", a.OpenWorldHint)
	}
	for _, p := range spec.Params {
		flattenParam(m, "params."+p.Name, p)
	}
	if spec.Returns != nil {
		flattenSchema(m, "returns", spec.Returns)
	}
	return m
}

func flattenParam(m map[string]value, path string, p *toolreg.Param) {
	flattenSchema(m, path, &p.Schema)
	if p.Optional && !p.HasDefault {
		m[path+".required"] = value{"false", "false"}
	}
}

func flattenSchema(m map[string]value, path string, s *toolreg.Schema) {
	m[path+".type"] = value{string(s.Type), string(s.Type)}
	if s.Description != "" {
		m[path+".description"] = value{s.Description, strconv.Quote(s.Description)}
	}
	if s.HasDefault {
		m[path+".default"] = jsonValue(s.Default)
	}
	if s.Enum != nil {
		m[path+".enum"] = jsonValue(s.Enum)
	}
	for _, n := range []struct {
		k string
		v json.Number
	}{{"minimum", s.Minimum}, {"maximum", s.Maximum}, {"exclusiveMinimum", s.ExclusiveMinimum}, {"exclusiveMaximum", s.ExclusiveMaximum}, {"multipleOf", s.MultipleOf}} {
		if n.v != "" {
			m[path+"."+n.k] = number(n.v)
		}
	}
	for _, n := range []struct {
		k string
		v *int
	}{{"minLength", s.MinLength}, {"maxLength", s.MaxLength}, {"minItems", s.MinItems}, {"maxItems", s.MaxItems}} {
		if n.v != nil {
			t := strconv.Itoa(*n.v)
			m[path+"."+n.k] = value{t, t}
		}
	}
	if s.Pattern != "" {
		m[path+".pattern"] = value{s.Pattern, strconv.Quote(s.Pattern)}
	}
	if s.Format != "" {
		m[path+".format"] = value{s.Format, strconv.Quote(s.Format)}
	}
	if s.UniqueItems {
		m[path+".uniqueItems"] = value{"true", "true"}
	}
	if s.Items != nil {
		flattenSchema(m, path+".items", s.Items)
	}
	for _, p := range s.Properties {
		flattenParam(m, path+".properties."+p.Name, p)
	}
	if s.AdditionalProperties != nil {
		flattenSchema(m, path+".additionalProperties", s.AdditionalProperties)
	}
}

// number compares numbers by value: 10, 10.0 and 1e1 are one bound.
func number(n json.Number) value {
	if r, ok := new(big.Rat).SetString(string(n)); ok {
		return value{r.RatString(), string(n)}
	}
	return value{string(n), string(n)}
}

func jsonValue(v any) value {
	b, err := canonjson.Marshal(v)
	if err != nil {
		s := fmt.Sprint(v)
		return value{s, s}
	}
	return value{string(b), string(b)}
}

// excerpt shows a and b from a little before their first difference, each
// cut to a readable length, so that a change at the end of a long
// description is what a person sees.
func excerpt(a, b string, bok bool) (string, string) {
	const before, width = 24, 160
	if !bok {
		return cut(a, width), "(absent)"
	}
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	start := max(0, i-before)
	for start > 0 && (!utf8RuneStart(a[start]) || start < len(b) && !utf8RuneStart(b[start])) {
		start--
	}
	show := func(s string) string {
		if start == 0 || start > len(s) {
			return cut(s, width)
		}
		return "…" + cut(s[start:], width)
	}
	return show(a), show(b)
}

// toSpec is spec with its pinned contract replaced by what s serves: the
// manifest pin writes, and the form compare flattens.
func toSpec(spec *toolreg.Spec, s *served) *toolreg.Spec {
	out := *spec
	r := *spec.Remote
	r.Title, r.ReadOnlyHint = s.Title, s.ReadOnly
	out.Remote = &r
	out.Description = s.Description
	out.Params = s.Params
	out.Returns = s.Returns
	out.Annotations = s.Annotations
	return &out
}

// same reports whether s serves exactly the contract spec pins, comparing
// field by field as flatten lists them, without building the list.
func same(spec *toolreg.Spec, s *served) bool {
	r := spec.Remote
	if spec.Description != s.Description || r.Title != s.Title || r.ReadOnlyHint != s.ReadOnly ||
		!sameAnnotations(spec.Annotations, s.Annotations) || len(spec.Params) != len(s.Params) ||
		(spec.Returns == nil) != (s.Returns == nil) {
		return false
	}
	if !sameParams(spec.Params, s.Params) {
		return false
	}
	return spec.Returns == nil || sameSchema(spec.Returns, s.Returns)
}

func sameAnnotations(a, b *toolreg.Annotations) bool {
	var za, zb toolreg.Annotations
	if a == nil {
		a = &za
	}
	if b == nil {
		b = &zb
	}
	idem := func(p *bool) bool { return p != nil && *p } // MCP's false and absent are one
	return a.Title == b.Title && sameFlag(a.DestructiveHint, b.DestructiveHint) &&
		idem(a.IdempotentHint) == idem(b.IdempotentHint) && sameFlag(a.OpenWorldHint, b.OpenWorldHint)
}

func sameFlag(a, b *bool) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// sameParams compares two lists of params by name: their order is no part
// of the contract.
func sameParams(a, b []*toolreg.Param) bool {
	if len(a) != len(b) {
		return false
	}
	for i, p := range a {
		q := b[i]
		if q.Name != p.Name {
			q = nil
			for _, x := range b {
				if x.Name == p.Name {
					q = x
					break
				}
			}
			if q == nil {
				return false
			}
		}
		if p.Optional && !p.HasDefault != (q.Optional && !q.HasDefault) || !sameSchema(&p.Schema, &q.Schema) {
			return false
		}
	}
	return true
}

func sameSchema(a, b *toolreg.Schema) bool {
	if a.Type != b.Type || a.Description != b.Description || a.HasDefault != b.HasDefault ||
		a.Pattern != b.Pattern || a.Format != b.Format || a.UniqueItems != b.UniqueItems ||
		!sameInt(a.MinLength, b.MinLength) || !sameInt(a.MaxLength, b.MaxLength) ||
		!sameInt(a.MinItems, b.MinItems) || !sameInt(a.MaxItems, b.MaxItems) ||
		!sameNumber(a.Minimum, b.Minimum) || !sameNumber(a.Maximum, b.Maximum) ||
		!sameNumber(a.ExclusiveMinimum, b.ExclusiveMinimum) || !sameNumber(a.ExclusiveMaximum, b.ExclusiveMaximum) ||
		!sameNumber(a.MultipleOf, b.MultipleOf) || (a.Enum == nil) != (b.Enum == nil) ||
		(a.Items == nil) != (b.Items == nil) || (a.AdditionalProperties == nil) != (b.AdditionalProperties == nil) {
		return false
	}
	if a.HasDefault && jsonValue(a.Default).cmp != jsonValue(b.Default).cmp {
		return false
	}
	if a.Enum != nil && jsonValue(a.Enum).cmp != jsonValue(b.Enum).cmp {
		return false
	}
	if a.Items != nil && !sameSchema(a.Items, b.Items) {
		return false
	}
	if a.AdditionalProperties != nil && !sameSchema(a.AdditionalProperties, b.AdditionalProperties) {
		return false
	}
	return sameParams(a.Properties, b.Properties)
}

func sameInt(a, b *int) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func sameNumber(a, b json.Number) bool {
	return a == b || a != "" && b != "" && number(a).cmp == number(b).cmp
}
