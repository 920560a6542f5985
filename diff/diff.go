package diff

import (
	"encoding/json"
	"fmt"
	"math/big"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/canonjson"
)

// Class is how risky a change is.
type Class int

// The classes, from least to most severe.
const (
	Compatible Class = iota
	Breaking
	Safety
)

func (c Class) String() string {
	switch c {
	case Compatible:
		return "compatible"
	case Breaking:
		return "breaking"
	case Safety:
		return "safety"
	}
	return fmt.Sprintf("Class(%d)", int(c))
}

// Change is one difference between the old and the new contract of a tool.
type Change struct {
	Class Class
	Tool  string
	// Path is the field that changed, such as "params.amount.maximum"; "" for
	// the tool as a whole.
	Path    string
	Message string
	Old     toolreg.Pos // where the old contract said it; zero for an addition
	New     toolreg.Pos // where the new contract says it; zero for a removal
}

func (c Change) String() string {
	p := toolreg.Problem{Pos: c.pos(), Tool: c.Tool, Path: c.Path, Message: c.Message}
	return c.Class.String() + ": " + p.String()
}

// pos is where a reader finds the change: in the new contract, or for a
// removal in the old one.
func (c Change) pos() toolreg.Pos {
	if c.New.IsValid() {
		return c.New
	}
	return c.Old
}

// Report is the outcome of a comparison.
type Report struct {
	Changes []Change
}

// Worst returns the most severe class among the changes, and false when there
// are none.
func (r *Report) Worst() (Class, bool) {
	if len(r.Changes) == 0 {
		return Compatible, false
	}
	w := Compatible
	for _, c := range r.Changes {
		w = max(w, c.Class)
	}
	return w, true
}

// Compare returns the changes from old to new, sorted by tool, then by
// severity (safety first), then by path.
func Compare(old, new []*toolreg.Spec) *Report {
	d := &differ{}
	oldBy := byName(old)
	newBy := byName(new)
	var removed, added []*toolreg.Spec
	for _, o := range old {
		if n, ok := newBy[o.Name]; ok {
			d.tool(o, n)
		} else {
			removed = append(removed, o)
		}
	}
	for _, n := range new {
		if _, ok := oldBy[n.Name]; !ok {
			added = append(added, n)
		}
	}
	for _, o := range removed {
		if n := renamedTo(o, added); n != nil {
			added = slices.DeleteFunc(added, func(s *toolreg.Spec) bool { return s == n })
			d.add(Breaking, o.Name, "", o.Pos, n.Pos, "tool renamed to %q: callers and models still calling %q fail", n.Name, o.Name)
			continue
		}
		d.add(Breaking, o.Name, "", o.Pos, toolreg.Pos{}, "tool removed: callers and models still calling it fail")
	}
	for _, n := range added {
		msg := "new tool"
		if n.SideEffect {
			msg = "new side-effecting tool: it runs only through Act and the effector"
		}
		d.add(Compatible, n.Name, "", toolreg.Pos{}, n.Pos, "%s", msg)
	}
	sort.SliceStable(d.changes, func(i, j int) bool {
		a, b := d.changes[i], d.changes[j]
		if a.Tool != b.Tool {
			return a.Tool < b.Tool
		}
		if a.Class != b.Class {
			return a.Class > b.Class
		}
		return a.Path < b.Path
	})
	return &Report{Changes: d.changes}
}

func byName(specs []*toolreg.Spec) map[string]*toolreg.Spec {
	m := make(map[string]*toolreg.Spec, len(specs))
	for _, s := range specs {
		m[s.Name] = s
	}
	return m
}

// renamedTo returns the added tool that is o under another name: the same
// description, side effect and params.
func renamedTo(o *toolreg.Spec, added []*toolreg.Spec) *toolreg.Spec {
	for _, n := range added {
		if n.Description == o.Description && n.SideEffect == o.SideEffect &&
			string(n.ParametersSchema()) == string(o.ParametersSchema()) {
			return n
		}
	}
	return nil
}

type differ struct {
	changes []Change
	// out is set while a tool's returns is compared: a result is read, not
	// sent, so what narrows the values a call may send (breaking for a
	// param) narrows what a consumer may receive (compatible for a result),
	// and the other way round.
	out bool
	// remote is set while a remote tool is compared: its descriptions came
	// from its server, and are text the model obeys.
	remote bool
}

func (d *differ) add(c Class, tool, path string, old, new toolreg.Pos, format string, args ...any) {
	d.changes = append(d.changes, Change{Class: c, Tool: tool, Path: path, Old: old, New: new, Message: fmt.Sprintf(format, args...)})
}

// narrow is the class of a change that narrows the values a schema allows:
// breaking for what a caller sends, compatible for what a consumer reads.
// widen is its opposite.
func (d *differ) narrow() Class {
	if d.out {
		return Compatible
	}
	return Breaking
}

func (d *differ) widen() Class {
	if d.out {
		return Breaking
	}
	return Compatible
}

// returns compares two tools' result contracts, for their consumers.
func (d *differ) returns(tool string, op, np toolreg.Pos, o, n *toolreg.Schema) {
	switch {
	case o == nil && n == nil:
		return
	case o == nil:
		d.add(Compatible, tool, "returns", op, np, "returns declared: results are now checked against it")
		return
	case n == nil:
		d.add(Breaking, tool, "returns", op, np, "returns removed: consumers lose the declared shape of the result, and results are no longer checked")
		return
	}
	d.out = true
	defer func() { d.out = false }()
	d.schema(tool, "returns", op, np, o, n)
}

func (d *differ) tool(o, n *toolreg.Spec) {
	switch {
	case !o.SideEffect && n.SideEffect:
		d.add(Safety, n.Name, "side_effect", o.Pos, n.Pos, "side_effect flipped false to true: the tool stops running inline; every call site must move to Act and the effector must bind it")
	case o.SideEffect && !n.SideEffect:
		d.add(Safety, n.Name, "side_effect", o.Pos, n.Pos, "side_effect flipped true to false: an effect would run inline, where a retried activation repeats it; make sure the tool really changes nothing")
	}
	switch {
	case o.Approval != nil && n.Approval == nil:
		d.add(Safety, n.Name, "approval", o.Pos, n.Pos, "approval: required removed: the effect runs without a person's decision")
	case o.Approval == nil && n.Approval != nil:
		d.add(Compatible, n.Name, "approval", o.Pos, n.Pos, "approval: required added: each call waits for a person's decision")
	case o.Approval != nil && *o.Approval != *n.Approval:
		d.add(Compatible, n.Name, "approval", o.Pos, n.Pos, "approval's reason or timeout changed")
	}
	d.remote = o.Remote != nil || n.Remote != nil
	defer func() { d.remote = false }()
	d.remoteOf(o, n)
	if o.Description != n.Description {
		d.description(n.Name, "description", o.Pos, n.Pos)
	}
	switch {
	case !o.Strict && n.Strict:
		d.add(Breaking, n.Name, "strict", o.Pos, n.Pos, "strict turned on: arguments the model sends as strings (\"10\") are no longer coerced")
	case o.Strict && !n.Strict:
		d.add(Compatible, n.Name, "strict", o.Pos, n.Pos, "strict turned off: more argument forms are accepted")
	}
	if !reflect.DeepEqual(o.Annotations, n.Annotations) {
		d.add(Compatible, n.Name, "annotations", o.Pos, n.Pos, "annotations changed")
	}
	// Tags and keywords change what a tool search finds and filters, never a
	// call.
	if !slices.Equal(o.Tags, n.Tags) {
		d.add(Compatible, n.Name, "tags", o.Pos, n.Pos, "tags changed: a search filtering by tag finds the tool differently")
	}
	if !slices.Equal(o.Keywords, n.Keywords) {
		d.add(Compatible, n.Name, "keywords", o.Pos, n.Pos, "keywords changed: tool search ranks the tool differently")
	}
	d.scopes(o, n)
	d.budgets(o, n)
	d.params(n.Name, "params", o.Params, n.Params)
	d.returns(n.Name, o.Pos, n.Pos, o.Returns, n.Returns)
}

// scopes compares who may call a tool: a scope added locks out every
// caller without it (breaking for them); a scope removed lets in callers
// the tool refused (a safety change, as when approval is removed).
func (d *differ) scopes(o, n *toolreg.Spec) {
	for _, s := range n.Scopes {
		if !slices.Contains(o.Scopes, s) {
			d.add(Breaking, n.Name, "scopes", o.Pos, n.Pos, "scope %q added: callers whose token or principal lacks it are refused the tool, and it is no longer offered, listed nor found to them", s)
		}
	}
	for _, s := range o.Scopes {
		if !slices.Contains(n.Scopes, s) {
			d.add(Safety, n.Name, "scopes", o.Pos, n.Pos, "scope %q removed: callers without it may now call the tool", s)
		}
	}
}

// budgets compares how often a tool may be called: a budget added or
// tightened refuses calls that passed (breaking); one removed or loosened
// lets through calls it refused, an expensive or harmful tool among them
// (safety).
func (d *differ) budgets(o, n *toolreg.Spec) {
	var ob, nb toolreg.Budgets
	if o.Budgets != nil {
		ob = *o.Budgets
	}
	if n.Budgets != nil {
		nb = *n.Budgets
	}
	limit := func(path string, old, new int, what string) {
		switch {
		case old == new:
		case old == 0:
			d.add(Breaking, n.Name, path, o.Pos, n.Pos, "budget added: at most %d %s; calls over it are refused", new, what)
		case new == 0:
			d.add(Safety, n.Name, path, o.Pos, n.Pos, "budget removed: calls are no longer limited to %d %s", old, what)
		case new < old:
			d.add(Breaking, n.Name, path, o.Pos, n.Pos, "budget tightened from %d to %d %s: calls that passed are refused", old, new, what)
		default:
			d.add(Safety, n.Name, path, o.Pos, n.Pos, "budget loosened from %d to %d %s: calls it refused pass", old, new, what)
		}
	}
	limit("budgets.per_activation", ob.PerActivation, nb.PerActivation, "calls per activation")
	oe, ne := ob.PerEntity, nb.PerEntity
	switch {
	case oe == nil && ne == nil:
	case oe == nil || ne == nil:
		var oc, nc int
		var w string
		if oe != nil {
			oc, w = oe.Calls, oe.Window.String()
		}
		if ne != nil {
			nc, w = ne.Calls, ne.Window.String()
		}
		limit("budgets.per_entity", oc, nc, "calls per entity in "+w)
	case oe.Calls == ne.Calls && oe.Window == ne.Window:
	// Fewer calls or a longer window refuses more; a window compared by
	// its rate alone would miss a burst the shorter one allowed.
	case ne.Calls <= oe.Calls && ne.Window >= oe.Window:
		d.add(Breaking, n.Name, "budgets.per_entity", o.Pos, n.Pos, "budget tightened from %d calls per entity in %s to %d in %s: calls that passed are refused", oe.Calls, oe.Window, ne.Calls, ne.Window)
	case ne.Calls >= oe.Calls && ne.Window <= oe.Window:
		d.add(Safety, n.Name, "budgets.per_entity", o.Pos, n.Pos, "budget loosened from %d calls per entity in %s to %d in %s: calls it refused pass", oe.Calls, oe.Window, ne.Calls, ne.Window)
	default:
		d.add(Breaking, n.Name, "budgets.per_entity", o.Pos, n.Pos, "budget changed from %d calls per entity in %s to %d in %s: it refuses some calls that passed, and passes some it refused", oe.Calls, oe.Window, ne.Calls, ne.Window)
	}
}

// description reports an edited description: compatible for a local tool,
// whose text its own team wrote; a safety change for a remote one, whose
// text came from its server and is what the model obeys (a rug pull or a
// poisoned tool shows here first).
func (d *differ) description(tool, path string, op, np toolreg.Pos) {
	if d.remote {
		d.add(Safety, tool, path, op, np, "description changed by its MCP server: it is text the model obeys; read it whole before this merges")
		return
	}
	d.add(Compatible, tool, path, op, np, "description edited")
}

// remoteOf compares where a remote tool is served.
func (d *differ) remoteOf(o, n *toolreg.Spec) {
	or, nr := o.Remote, n.Remote
	switch {
	case or == nil && nr == nil:
	case or == nil:
		d.add(Safety, n.Name, "remote", o.Pos, n.Pos, "now served by MCP server %q (tool %q), not by this service's code: another party's code runs for it", nr.Server, nr.Tool)
	case nr == nil:
		d.add(Safety, n.Name, "remote", o.Pos, n.Pos, "no longer served by MCP server %q: a Go function must bind it now", or.Server)
	default:
		if or.Server != nr.Server || or.Tool != nr.Tool {
			d.add(Safety, n.Name, "remote", o.Pos, n.Pos, "now served by MCP server %q as %q, not %q as %q: other code runs for it", nr.Server, nr.Tool, or.Server, or.Tool)
		}
		if or.Title != nr.Title {
			d.add(Compatible, n.Name, "remote.title", o.Pos, n.Pos, "the server's title changed from %q to %q", or.Title, nr.Title)
		}
		if or.ReadOnlyHint != nr.ReadOnlyHint {
			d.add(Compatible, n.Name, "remote.read_only_hint", o.Pos, n.Pos, "the server's readOnlyHint changed to %v: a hint only; side_effect decides how the tool runs", nr.ReadOnlyHint)
		}
	}
}

func (d *differ) params(tool, path string, old, new []*toolreg.Param) {
	newBy := make(map[string]*toolreg.Param, len(new))
	for _, p := range new {
		newBy[p.Name] = p
	}
	oldBy := make(map[string]*toolreg.Param, len(old))
	for _, o := range old {
		oldBy[o.Name] = o
		pp := path + "." + o.Name
		n, ok := newBy[o.Name]
		if !ok && d.out {
			d.add(Breaking, tool, pp, o.Pos, toolreg.Pos{}, "result field removed: consumers that read it find nothing")
			continue
		}
		if !ok {
			d.add(Breaking, tool, pp, o.Pos, toolreg.Pos{}, "param removed: calls that pass it are refused as an unknown key")
			continue
		}
		switch {
		case d.out && !o.Required() && n.Required():
			d.add(Compatible, tool, pp, o.Pos, n.Pos, "result field became required: it is always there now")
		case d.out && o.Required() && !n.Required():
			d.add(Breaking, tool, pp, o.Pos, n.Pos, "result field became optional: consumers that expect it may find it missing")
		case d.out:
		case !o.Required() && n.Required():
			d.add(Breaking, tool, pp, o.Pos, n.Pos, "param became required: calls that leave it out are refused")
		case o.Required() && !n.Required():
			d.add(Compatible, tool, pp, o.Pos, n.Pos, "param became optional")
		}
		d.schema(tool, pp, o.Pos, n.Pos, &o.Schema, &n.Schema)
	}
	for _, n := range new {
		if _, ok := oldBy[n.Name]; ok {
			continue
		}
		pp := path + "." + n.Name
		if d.out {
			d.add(Compatible, tool, pp, toolreg.Pos{}, n.Pos, "new result field")
			continue
		}
		if n.Required() {
			d.add(Breaking, tool, pp, toolreg.Pos{}, n.Pos, "new required param: existing calls lack it and are refused; give it a default or required: false")
		} else {
			d.add(Compatible, tool, pp, toolreg.Pos{}, n.Pos, "new optional param")
		}
	}
}

func (d *differ) schema(tool, path string, op, np toolreg.Pos, o, n *toolreg.Schema) {
	if o.Type != n.Type {
		d.add(Breaking, tool, path+".type", op, np, "type changed from %s to %s", o.Type, n.Type)
		return // the constraints of different types do not compare
	}
	if o.Description != n.Description {
		d.description(tool, path+".description", op, np)
	}
	switch {
	case d.out:
		// A result's default says nothing a consumer reads.
	case o.HasDefault && n.HasDefault && !jsonEqual(o.Default, n.Default):
		d.add(Breaking, tool, path+".default", op, np, "default changed from %s to %s: calls that leave it out now do something else", show(o.Default), show(n.Default))
	case o.HasDefault && !n.HasDefault:
		d.add(Breaking, tool, path+".default", op, np, "default %s removed", show(o.Default))
	case !o.HasDefault && n.HasDefault:
		d.add(Compatible, tool, path+".default", op, np, "default %s added", show(n.Default))
	}
	d.enum(tool, path+".enum", op, np, o.Enum, n.Enum)
	// A lower bound that rises, or an upper bound that falls, tightens.
	d.bound(tool, path+".minimum", op, np, o.Minimum, n.Minimum, true)
	d.bound(tool, path+".exclusiveMinimum", op, np, o.ExclusiveMinimum, n.ExclusiveMinimum, true)
	d.bound(tool, path+".maximum", op, np, o.Maximum, n.Maximum, false)
	d.bound(tool, path+".exclusiveMaximum", op, np, o.ExclusiveMaximum, n.ExclusiveMaximum, false)
	d.bound(tool, path+".minLength", op, np, intf(o.MinLength), intf(n.MinLength), true)
	d.bound(tool, path+".maxLength", op, np, intf(o.MaxLength), intf(n.MaxLength), false)
	d.bound(tool, path+".minItems", op, np, intf(o.MinItems), intf(n.MinItems), true)
	d.bound(tool, path+".maxItems", op, np, intf(o.MaxItems), intf(n.MaxItems), false)
	d.exact(tool, path+".multipleOf", op, np, fmtn(o.MultipleOf), fmtn(n.MultipleOf))
	d.exact(tool, path+".pattern", op, np, o.Pattern, n.Pattern)
	d.exact(tool, path+".format", op, np, o.Format, n.Format)
	switch {
	case !o.UniqueItems && n.UniqueItems:
		d.add(d.narrow(), tool, path+".uniqueItems", op, np, "uniqueItems added: arrays with repeated items are refused")
	case o.UniqueItems && !n.UniqueItems:
		d.add(d.widen(), tool, path+".uniqueItems", op, np, "uniqueItems removed")
	}
	switch {
	case o.Items != nil && n.Items != nil:
		d.schema(tool, path+".items", op, np, o.Items, n.Items)
	case o.Items == nil && n.Items != nil:
		d.add(d.narrow(), tool, path+".items", op, np, "items schema added: array elements are now checked")
	case o.Items != nil && n.Items == nil:
		d.add(d.widen(), tool, path+".items", op, np, "items schema removed")
	}
	if o.Type == toolreg.TypeObject {
		d.params(tool, path+".properties", o.Properties, n.Properties)
		switch {
		case o.AdditionalProperties != nil && n.AdditionalProperties != nil:
			d.schema(tool, path+".additionalProperties", op, np, o.AdditionalProperties, n.AdditionalProperties)
		case o.AdditionalProperties == nil && n.AdditionalProperties != nil:
			d.add(d.widen(), tool, path+".additionalProperties", op, np, "additionalProperties allowed: the object may have other members")
		case o.AdditionalProperties != nil && n.AdditionalProperties == nil:
			d.add(d.narrow(), tool, path+".additionalProperties", op, np, "additionalProperties removed: other members are refused")
		}
	}
}

func (d *differ) enum(tool, path string, op, np toolreg.Pos, o, n []any) {
	switch {
	case o == nil && n == nil:
		return
	case o == nil:
		d.add(d.narrow(), tool, path, op, np, "enum added: only %s are allowed", show(n))
		return
	case n == nil:
		d.add(d.widen(), tool, path, op, np, "enum removed: any value of the type is allowed")
		return
	}
	var gone, come []any
	for _, v := range o {
		if !containsJSON(n, v) {
			gone = append(gone, v)
		}
	}
	for _, v := range n {
		if !containsJSON(o, v) {
			come = append(come, v)
		}
	}
	if len(gone) > 0 {
		d.add(d.narrow(), tool, path, op, np, "enum values removed: %s", show(gone))
	}
	if len(come) > 0 {
		msg := "enum values added: %s"
		if d.out {
			msg = "enum values added: %s; consumers may receive values they do not handle"
		}
		d.add(d.widen(), tool, path, op, np, msg, show(come))
	}
}

// bound compares a lower (lower is true) or upper bound.
func (d *differ) bound(tool, path string, op, np toolreg.Pos, o, n json.Number, lower bool) {
	switch {
	case o == "" && n == "":
	case o == "":
		d.add(d.narrow(), tool, path, op, np, "constraint added: %s", n)
	case n == "":
		d.add(d.widen(), tool, path, op, np, "constraint removed (was %s)", o)
	case compareNumbers(o, n) == 0:
	case (compareNumbers(n, o) > 0) == lower:
		d.add(d.narrow(), tool, path, op, np, "constraint tightened from %s to %s", o, n)
	default:
		d.add(d.widen(), tool, path, op, np, "constraint loosened from %s to %s", o, n)
	}
}

// compareNumbers compares two JSON numbers exactly.
func compareNumbers(a, b json.Number) int {
	x, okx := new(big.Rat).SetString(string(a))
	y, oky := new(big.Rat).SetString(string(b))
	if !okx || !oky {
		return strings.Compare(string(a), string(b))
	}
	return x.Cmp(y)
}

// exact compares a constraint whose change cannot be ordered: any new or
// changed value may refuse what was accepted.
func (d *differ) exact(tool, path string, op, np toolreg.Pos, o, n string) {
	switch {
	case o == n:
	case o == "":
		d.add(d.narrow(), tool, path, op, np, "constraint added: %s", n)
	case n == "":
		d.add(d.widen(), tool, path, op, np, "constraint removed (was %s)", o)
	default:
		d.add(Breaking, tool, path, op, np, "constraint changed from %s to %s", o, n)
	}
}

func intf(p *int) json.Number {
	if p == nil {
		return ""
	}
	return json.Number(strconv.Itoa(*p))
}

// fmtn is a multipleOf as the diff shows it: equal values written alike
// (0.50 and 0.5) compare equal.
func fmtn(n json.Number) string {
	if r, ok := new(big.Rat).SetString(string(n)); ok && n != "" {
		return r.RatString()
	}
	return string(n)
}

func jsonEqual(a, b any) bool {
	x, err1 := canonjson.Marshal(a)
	y, err2 := canonjson.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

func containsJSON(list []any, v any) bool {
	return slices.ContainsFunc(list, func(e any) bool { return jsonEqual(e, v) })
}

func show(v any) string {
	b, err := canonjson.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(fmt.Sprint(v))
	}
	return string(b)
}
