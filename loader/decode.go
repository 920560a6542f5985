package loader

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/beam-agents/toolreg"
)

// decodeSpec builds a Spec from a tool node. A value of the wrong kind, which
// the schema refuses, is left out, so that a tool with problems still decodes
// for the loader's own rules.
func decodeSpec(n *node) *toolreg.Spec {
	s := &toolreg.Spec{Pos: n.pos}
	for i, k := range n.keys {
		v := n.vals[i]
		switch k {
		case "name":
			s.Name = str(v)
		case "description":
			s.Description = str(v)
		case "side_effect":
			s.SideEffect = v.text == "true"
		case "strict":
			s.Strict = v.text == "true"
		case "params":
			if v.kind == kindMap {
				s.Params = decodeParams(v)
			}
		case "returns":
			if v.kind == kindMap {
				s.Returns = &toolreg.Schema{}
				decodeSchema(v, s.Returns)
			}
		case "approval":
			if str(v) == "required" {
				if s.Approval == nil {
					s.Approval = &toolreg.Approval{}
				}
			}
		case "approval_reason":
			if s.Approval == nil {
				s.Approval = &toolreg.Approval{}
			}
			s.Approval.Reason = str(v)
		case "approval_timeout":
			if s.Approval == nil {
				s.Approval = &toolreg.Approval{}
			}
			s.Approval.Timeout, _ = time.ParseDuration(str(v)) // the schema checked its form
		case "annotations":
			if v.kind == kindMap {
				s.Annotations = decodeAnnotations(v)
			}
		case "tags":
			s.Tags = decodeStrings(v)
		case "keywords":
			s.Keywords = decodeStrings(v)
		case "scopes":
			s.Scopes = decodeStrings(v)
		case "budgets":
			if v.kind == kindMap {
				s.Budgets = decodeBudgets(v)
			}
		case "remote":
			if v.kind == kindMap {
				s.Remote = decodeRemote(v)
			}
		}
	}
	return s
}

// decodeBudgets builds a tool's budgets; a value the schema refuses is left
// zero.
func decodeBudgets(n *node) *toolreg.Budgets {
	b := &toolreg.Budgets{}
	if v, _, ok := n.get(toolreg.BudgetPerActivation); ok {
		if p := intPtr(v); p != nil {
			b.PerActivation = *p
		}
	}
	if v, _, ok := n.get(toolreg.BudgetPerEntity); ok && v.kind == kindMap {
		e := &toolreg.WindowBudget{}
		if c, _, ok := v.get("calls"); ok {
			if p := intPtr(c); p != nil {
				e.Calls = *p
			}
		}
		if w, _, ok := v.get("window"); ok {
			e.Window, _ = time.ParseDuration(str(w)) // checkSpec says when it is none
		}
		b.PerEntity = e
	}
	return b
}

// decodeStrings returns a list of strings the schema has checked.
func decodeStrings(n *node) []string {
	out := make([]string, len(n.items))
	for i, it := range n.items {
		out[i] = it.text
	}
	return out
}

func decodeAnnotations(n *node) *toolreg.Annotations {
	a := &toolreg.Annotations{}
	for i, k := range n.keys {
		v := n.vals[i]
		switch k {
		case "title":
			a.Title = str(v)
		case "destructiveHint":
			a.DestructiveHint = boolPtr(v)
		case "idempotentHint":
			a.IdempotentHint = boolPtr(v)
		case "openWorldHint":
			a.OpenWorldHint = boolPtr(v)
		}
	}
	return a
}

func decodeRemote(n *node) *toolreg.Remote {
	r := &toolreg.Remote{}
	for i, k := range n.keys {
		v := n.vals[i]
		switch k {
		case "server":
			r.Server = str(v)
		case "tool":
			r.Tool = str(v)
		case "title":
			r.Title = str(v)
		case "read_only_hint":
			r.ReadOnlyHint = v.text == "true"
		}
	}
	return r
}

func decodeParams(n *node) []*toolreg.Param {
	ps := make([]*toolreg.Param, len(n.keys))
	for i, k := range n.keys {
		v := n.vals[i]
		p := &toolreg.Param{Name: k, Pos: n.kpos[i]}
		decodeSchema(v, &p.Schema)
		if r, _, ok := v.get("required"); ok && r.text == "false" {
			p.Optional = true
		}
		ps[i] = p
	}
	return ps
}

func decodeSchema(n *node, s *toolreg.Schema) {
	for i, k := range n.keys {
		v := n.vals[i]
		switch k {
		case "type":
			s.Type = toolreg.Type(str(v))
		case "description":
			s.Description = str(v)
		case "default":
			s.Default, s.HasDefault = v.value(), true
		case "enum":
			if v.kind == kindList {
				s.Enum = v.value().([]any)
			}
		case "minimum":
			s.Minimum = number(v)
		case "maximum":
			s.Maximum = number(v)
		case "exclusiveMinimum":
			s.ExclusiveMinimum = number(v)
		case "exclusiveMaximum":
			s.ExclusiveMaximum = number(v)
		case "multipleOf":
			s.MultipleOf = number(v)
		case "minLength":
			s.MinLength = intPtr(v)
		case "maxLength":
			s.MaxLength = intPtr(v)
		case "pattern":
			s.Pattern = str(v)
		case "format":
			s.Format = str(v)
		case "minItems":
			s.MinItems = intPtr(v)
		case "maxItems":
			s.MaxItems = intPtr(v)
		case "uniqueItems":
			s.UniqueItems = v.text == "true"
		case "items":
			if v.kind == kindMap {
				s.Items = &toolreg.Schema{}
				decodeSchema(v, s.Items)
			}
		case "properties":
			if v.kind == kindMap {
				s.Properties = decodeParams(v)
			}
		case "additionalProperties":
			if v.kind == kindMap {
				s.AdditionalProperties = &toolreg.Schema{}
				decodeSchema(v, s.AdditionalProperties)
			}
		}
	}
}

func boolPtr(n *node) *bool {
	b := n.text == "true"
	return &b
}

// number is a numeric keyword as written: exact, never rounded to a float64.
func number(n *node) json.Number {
	if n.kind != kindInt && n.kind != kindFloat {
		return "" // refused by the schema
	}
	return json.Number(n.text)
}

func intPtr(n *node) *int {
	i, err := strconv.Atoi(n.text)
	if n.kind != kindInt || err != nil {
		return nil // refused by the schema
	}
	return &i
}

// str is a string node's text; the text of a node of another kind, which the
// schema refuses, is not a string to keep.
func str(n *node) string {
	if n.kind != kindString {
		return ""
	}
	return n.text
}
