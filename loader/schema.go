package loader

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/canonjson"
)

// schemaFile is the file name the embedded schema is compiled under, so that
// positions inside it can be told from positions in manifests.
const schemaFile = "schema.cue"

// defs are #Tool and #Param of the embedded schema, compiled once per
// process. CUE values may be unified with values of other contexts
// (cuelang.org/go v0.17), so each document is built in a context of its own
// and unified with them: the document's context, and all it retains, is
// garbage once the document is checked, while this one stays the size of the
// schema.
var defs = sync.OnceValues(func() (tool, params cue.Value) {
	v := cuecontext.New().CompileString(toolreg.SchemaCUE(), cue.Filename(schemaFile))
	if err := v.Err(); err != nil {
		panic("loader: embedded schema.cue does not compile: " + err.Error())
	}
	return v.LookupPath(cue.MakePath(cue.Def("Tool"))), v.LookupPath(cue.MakePath(cue.Def("Tool"), cue.Str("params").Optional()))
})

// checkYAMLTool checks one YAML document against #Tool and returns its
// problems. bad are the problems found decoding the document: the values they
// are about are left out of the check, and so are CUE's errors about them.
//
// The tool is checked without its params against #Tool, then its params in
// chunks of paramChunk against #Tool.params: CUE finds a field of a struct by
// a linear search, so one struct of n params costs n² to check, and n params
// in chunks cost n. A tool of 40,000 params (0.9 MiB) loads in time linear
// in them.
func checkYAMLTool(c *checker, root *node, bad []toolreg.Problem) []toolreg.Problem {
	toolDef, paramsDef := defs()
	tool := ""
	if n, _, ok := root.get("name"); ok && n.kind == kindString {
		tool = n.text
	}
	for i := range bad {
		bad[i].Tool = tool
	}
	var ctx *cue.Context // made when a shape is first checked: most are known
	where := func(_ cueerrors.Error, path []string) toolreg.Pos {
		_, pos := root.lookup(path)
		return pos
	}
	var ps []toolreg.Problem
	check := func(n *node, def cue.Value, base []string) bool {
		// Encode, rather than building a syntax tree, skips the compiler:
		// the document is data, with no references to resolve.
		if ctx == nil {
			ctx = cuecontext.New()
		}
		if err := ctx.Encode(n.goValue()).Unify(def).Validate(cue.Concrete(true)); err != nil {
			ps = append(ps, translate(cueerrors.Errors(err), 0, base, tool, root, where)...)
			return false
		}
		return true
	}
	top := root
	params, _, _ := root.get("params")
	if params != nil && params.kind == kindMap {
		cp := *root
		cp.vals = slices.Clone(root.vals)
		for i, k := range cp.keys {
			if k == "params" {
				cp.vals[i] = &node{kind: kindMap, pos: params.pos}
			}
		}
		top = &cp
	}
	// A registry repeats its tools' shape too: one the schema accepted is not
	// checked again (see toolShape).
	tsh := "tool:" + top.toolShape()
	if _, ok := c.clean.Load(tsh); !ok && check(top, toolDef, nil) {
		c.clean.Store(tsh, true)
	}
	if top == root {
		return finish(ps, tool, root)
	}
	// The params in chunks, each a struct of its own against #Tool.params.
	// A registry repeats its params' shapes (customer_id, limit): a shape
	// the schema accepted once is not checked again.
	chunk := &node{kind: kindMap, pos: params.pos}
	var shapes []string
	flush := func() {
		if len(chunk.keys) > 0 && check(chunk, paramsDef, []string{"params"}) {
			for _, sh := range shapes {
				c.clean.Store(sh, true)
			}
		}
		chunk = &node{kind: kindMap, pos: params.pos}
		shapes = shapes[:0]
	}
	for i, name := range params.keys {
		v := params.vals[i]
		if v.bad {
			continue
		}
		sh := v.paramShape()
		if _, ok := c.clean.Load(sh); ok && validName(name, true) {
			continue
		}
		chunk.keys = append(chunk.keys, name)
		chunk.kpos = append(chunk.kpos, params.kpos[i])
		chunk.vals = append(chunk.vals, v)
		shapes = append(shapes, sh)
		if len(chunk.keys) == paramChunk {
			flush()
		}
	}
	flush()
	return finish(ps, tool, root)
}

// validName reports whether name matches #ParamName of schema.cue,
// ^[a-zA-Z0-9_.-]{1,64}$ (param true), or #Tool's name pattern,
// ^[a-zA-Z0-9_-]{1,64}$: a tool or param skipped for its shape must still
// have a name the schema takes. A loop, not a regexp: it runs for every
// param of every tool.
func validName(name string, param bool) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '-':
		case c == '.' && param:
		default:
			return false
		}
	}
	return true
}

// paramChunk is how many params are unified with the schema at a time: CUE
// finds a struct's field by a linear search, so a chunk of k costs k², and n
// params in chunks cost n·k.
const paramChunk = 64

// finish adds what CUE leaves out and drops what decoding already said.
func finish(ps []toolreg.Problem, tool string, root *node) []toolreg.Problem {
	ps = withMissing(ps, tool, root, true)
	return slices.DeleteFunc(ps, func(p toolreg.Problem) bool { return onBadNode(root, p.Path) })
}

// onBadNode reports whether path leads to, or through, a value the YAML
// decoder refused: its problem is already said.
func onBadNode(root *node, path string) bool {
	if path == "" {
		return false
	}
	cur := root
	for el := range strings.SplitSeq(path, ".") {
		next, _ := cur.lookup([]string{el})
		if next == nil {
			return false
		}
		if next.bad {
			return true
		}
		cur = next
	}
	return false
}

// withMissing adds to ps the missing required fields of the tool tree that ps
// does not already report. CUE reports a missing field only when nothing else
// is wrong; a manifest's author wants every problem at once.
// A CUE tool's name is its key, so only a YAML tool can miss it (withName).
func withMissing(ps []toolreg.Problem, tool string, tree *node, withName bool) []toolreg.Problem {
	if tree == nil || tree.kind != kindMap {
		return ps
	}
	has := map[string]bool{}
	for _, p := range ps {
		has[p.Path+"\x00"+p.Message] = true
	}
	add := func(pos toolreg.Pos, path, msg string) {
		if !has[path+"\x00"+msg] {
			has[path+"\x00"+msg] = true
			ps = append(ps, toolreg.Problem{Pos: pos, Tool: tool, Path: path, Message: msg})
		}
	}
	for _, k := range []string{"name", "description"} {
		if _, _, ok := tree.get(k); !ok && (k != "name" || withName) {
			add(tree.pos, k, "missing "+k+requiredHint(k))
		}
	}
	// Keys the schema does not allow: CUE leaves them out of its report when
	// a param has an error of its own.
	for i, k := range tree.keys {
		if !slices.Contains(toolKeys, k) && (k != "name" || withName) {
			add(tree.kpos[i], cue.Str(k).String(), "field not allowed: "+notAllowedHint(tree, cueLabels([]string{k})))
		}
	}
	if params, _, ok := tree.get("params"); ok {
		missingTypes(tree, params, []string{"params"}, add)
	}
	if returns, kp, ok := tree.get("returns"); ok {
		missingTypesIn(tree, returns, kp, []string{"returns"}, false, add)
	}
	return ps
}

// missingTypes reports the params under a params or properties mapping that
// have no type, or no items for an array, or a key their type does not take,
// and those nested in their items and additionalProperties. tree is the tool;
// path holds the keys to params as written. A problem's path has them as CUE
// writes labels (cueLabels), so that a problem CUE reports too has the same
// path, and is reported once.
func missingTypes(tree, params *node, path []string, add func(toolreg.Pos, string, string)) {
	if params.kind != kindMap {
		return
	}
	for i, k := range params.keys {
		missingTypesIn(tree, params.vals[i], params.kpos[i], at(path, k), true, add)
	}
}

// missingTypesIn is missingTypes for the one schema n at path; param says
// whether n is a param or property, the schemas that may say required.
func missingTypesIn(tree, n *node, pos toolreg.Pos, path []string, param bool, add func(toolreg.Pos, string, string)) {
	if n.kind != kindMap {
		return
	}
	t, _, ok := n.get("type")
	if !ok {
		add(pos, strings.Join(cueLabels(path), "."), missingType(n))
	}
	if ok && t.kind == kindString && toolreg.Type(t.text).Valid() {
		if _, _, ok := n.get("items"); !ok && t.text == "array" {
			add(pos, strings.Join(cueLabels(at(path, "items")), "."), "missing items"+requiredHint("items"))
		}
		allowed := keywords[t.text]
		for i, k := range n.keys {
			if !slices.Contains(keywords[""], k) && !slices.Contains(allowed, k) || k == "required" && !param {
				bad := cueLabels(at(path, k))
				add(n.kpos[i], strings.Join(bad, "."), "field not allowed: "+notAllowedHint(tree, bad))
			}
		}
	}
	if it, kp, ok := n.get("items"); ok {
		missingTypesIn(tree, it, kp, at(path, "items"), false, add)
	}
	if ap, kp, ok := n.get("additionalProperties"); ok {
		missingTypesIn(tree, ap, kp, at(path, "additionalProperties"), false, add)
	}
	if props, _, ok := n.get("properties"); ok {
		missingTypes(tree, props, at(path, "properties"), add)
	}
}

// missingType is the message for a schema without a type.
func missingType(n *node) string {
	return "missing type: set type to one of " + typeNames + typoHint(n)
}

var typeNames = "string, integer, number, boolean, array, object"

// keywords lists the keys #Schema takes for each type, for hints on a key it
// refuses.
var keywords = map[string][]string{
	"":        {"type", "description", "default", "enum", "required"},
	"string":  {"minLength", "maxLength", "pattern", "format"},
	"integer": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
	"number":  {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
	"boolean": {},
	"array":   {"minItems", "maxItems", "uniqueItems", "items"},
	"object":  {"properties", "additionalProperties"},
}

var toolKeys = []string{"name", "description", "side_effect", "strict", "params", "returns", "approval", "approval_reason", "approval_timeout", "tags", "keywords", "annotations", "remote", "scopes", "budgets"}

var mismatchRE = regexp.MustCompile(`^conflicting values (.+) and (\S+) \(mismatched types (\w+) and (\w+)\)$`)

// translate turns CUE's errors about one tool into Problems: one per path,
// worded for someone editing a manifest. where finds a problem's position in
// the manifest; tree is the tool as written, to look values up.
//
// errs are CUE's errors about the tool; their paths start with prefix elements
// that lead to the tool (tools.<name> in a CUE package), which are dropped.
//
// base, when not nil, is the path of the value the errors are about inside
// the tool (params.<name> for a param checked alone); it is put before each
// error's path.
func translate(errs []cueerrors.Error, prefix int, base []string, tool string, tree *node, where func(e cueerrors.Error, path []string) toolreg.Pos) []toolreg.Problem {
	var ps []toolreg.Problem
	done := map[string]bool{} // paths that already have their problem
	for _, e := range errs {
		path := e.Path()
		if len(path) >= prefix {
			path = path[prefix:]
		}
		if base != nil {
			path = append(base[:len(base):len(base)], path...)
		}
		key := strings.Join(path, ".")
		format, args := e.Msg()
		msg := fmt.Sprintf(format, args...)
		if strings.HasSuffix(msg, "errors in empty disjunction:") || strings.HasSuffix(msg, "errors in empty disjunction") {
			continue // its parts follow as errors of their own
		}
		if strings.HasPrefix(msg, "undefined field: ") && e.Position().Filename() == schemaFile {
			// #keywords[type] of a type that is none of the six: the type's
			// own error says so.
			continue
		}
		var last string
		if len(path) > 0 {
			last = path[len(path)-1]
		}
		at, _ := tree.lookup(path)
		if at != nil && at.bad {
			at = nil
		}
		switch {
		case strings.HasPrefix(msg, "required field missing: type"):
			msg = missingType(at)
		case msg == "field is required but not present":
			msg = "missing " + last + requiredHint(last)
		case tool == "" && len(path) == 2 && path[0] == "scopes" && strings.Contains(msg, "field not allowed"):
			msg = fmt.Sprintf("invalid scope %q: use 1 to 128 printable ASCII characters other than space, '\"' and '\\' (an OAuth scope token)", unquoteLabel(last))
		case tool == "" && len(path) == 2 && path[0] == "scopes" && strings.Contains(msg, "out of bound"):
			msg = fmt.Sprintf("empty description of scope %q: say what the scope lets a caller do", unquoteLabel(last))
		case strings.Contains(msg, "field not allowed"):
			msg = "field not allowed: " + notAllowedHint(tree, path)
		case last == "type" && unknownType(msg, at) != "":
			msg = fmt.Sprintf("unknown type %s: use one of %s", unknownType(msg, at), typeNames)
		case len(path) == 1 && last == "name" && strings.Contains(msg, "out of bound"):
			msg = fmt.Sprintf("invalid tool name %q: use 1 to 64 letters, digits, '_' or '-'", tool)
		case len(path) == 2 && path[0] == "tags" && strings.Contains(msg, "out of bound"):
			msg = fmt.Sprintf("invalid tag %s: use 1 to 64 letters, digits, '_', '.', ':' or '-'", quotedValue(msg))
		case len(path) == 2 && path[0] == "keywords" && strings.Contains(msg, "out of bound"):
			msg = "empty keyword: remove it or write the word a search should match"
		case len(path) == 1 && last == "description" && strings.HasPrefix(msg, `invalid value "" (out of bound !="")`):
			msg = "empty description: say what the tool does, for the model"
		case len(path) == 1 && last == "approval" && strings.Contains(msg, "only a side-effecting tool"):
			msg = "only a side-effecting tool (side_effect: true) takes approval: a read-only tool runs inline, with nothing to approve; remove approval, or set side_effect: true if the tool changes the world"
		case len(path) == 1 && last == "approval" && strings.HasPrefix(msg, "conflicting values"):
			msg = fmt.Sprintf("approval takes one value, required; got %s", quotedValue(strings.Replace(msg, "conflicting values \"required\" and ", "invalid value ", 1)))
		case len(path) == 1 && last == "approval_timeout" && strings.Contains(msg, "out of bound"):
			msg = fmt.Sprintf("approval_timeout %s is not a duration: write it as Go does, such as \"30m\", \"24h\" or \"1h30m\"", quotedValue(msg))
		case tool != "" && len(path) == 2 && path[0] == "scopes" && strings.Contains(msg, "out of bound"):
			msg = fmt.Sprintf("invalid scope %s: use 1 to 128 printable ASCII characters other than space, '\"' and '\\' (an OAuth scope token)", quotedValue(msg))
		case len(path) >= 2 && path[0] == "budgets" && (last == toolreg.BudgetPerActivation || last == "calls") && strings.Contains(msg, "out of bound"):
			msg = fmt.Sprintf("%s %s is out of range: give 1 to 1000000 calls (a budget of none would refuse every call: remove the tool instead)", last, boundValue(msg))
		case len(path) == 3 && path[0] == "budgets" && last == "window" && strings.Contains(msg, "out of bound"):
			msg = fmt.Sprintf("window %s is not a duration: write it as Go does, such as \"1h\", \"24h\" or \"90m\"", quotedValue(msg))
		case len(path) == 1 && last == "approval_reason" && strings.Contains(msg, "out of bound"):
			msg = "empty approval_reason: say why a person must approve the call, or leave approval_reason out"
		case len(path) == 2 && path[0] == "remote" && last == "server" && strings.Contains(msg, "out of bound"):
			msg = fmt.Sprintf("invalid server name %s: use 1 to 64 letters, digits, '_', '.' or '-', as the service's configuration names the server", quotedValue(msg))
		case len(path) == 2 && path[0] == "remote" && last == "tool" && strings.Contains(msg, "out of bound"):
			msg = fmt.Sprintf("invalid remote tool name %s: use the tool's name on the server, 1 to 128 letters, digits, '_', '.', '/' or '-'", quotedValue(msg))
		case len(path) == 2 && path[0] == "remote" && last == "title" && strings.Contains(msg, "out of bound"):
			msg = "empty title: leave title out when the server serves none"
		case last == "required" && strings.HasPrefix(msg, "conflicting values"):
			msg = "required can only be false (for an optional param without a default); leave it out for a required param"
		case strings.HasPrefix(msg, "incomplete value"):
			msg = "no concrete value (" + msg + "): give the field its value"
		default:
			if m := mismatchRE.FindStringSubmatch(msg); m != nil {
				msg = mismatch(m, at)
			}
		}
		if done[key+"\x00"+msg] {
			continue
		}
		done[key+"\x00"+msg] = true
		ps = append(ps, toolreg.Problem{Pos: where(e, path), Tool: tool, Path: key, Message: msg})
	}
	return ps
}

var conflictRE = regexp.MustCompile(`^(?:conflicting values|invalid value) ("(?:[^"\\]|\\.)*")(?: and ("(?:[^"\\]|\\.)*"))?`)

// unknownType returns the quoted type a param names that is none of the six,
// from the value as written or from CUE's message about it; or "".
func unknownType(msg string, at *node) string {
	if at != nil && at.kind == kindString && !toolreg.Type(at.text).Valid() {
		return strconv.Quote(at.text)
	}
	if m := conflictRE.FindStringSubmatch(msg); m != nil {
		for _, q := range m[1:] {
			if t, err := strconv.Unquote(q); err == nil && !toolreg.Type(t).Valid() {
				return q
			}
		}
	}
	return ""
}

// typoHint points at the keys of a param without a type that are no keyword,
// such as "tpye".
func typoHint(param *node) string {
	if param == nil {
		return ""
	}
	var odd []string
	for _, k := range param.keys {
		known := false
		for _, ks := range keywords {
			known = known || slices.Contains(ks, k)
		}
		if !known {
			odd = append(odd, fmt.Sprintf("%q", k))
		}
	}
	if len(odd) == 0 {
		return ""
	}
	return " (" + strings.Join(odd, ", ") + " is no param keyword: a typo?)"
}

var cueKinds = [...]string{kindNull: "null", kindBool: "bool", kindInt: "int", kindFloat: "float", kindString: "string", kindList: "list", kindMap: "struct"}

// mismatch words CUE's "conflicting values A and B (mismatched types a and
// b)" as got-what, want-what. CUE may name either side first; the side that
// is a bare type (int, string, ...) is the schema's.
func mismatch(m []string, written *node) string {
	got, gotType, wantType := m[1], m[3], m[4]
	isType := func(s string) bool {
		switch s {
		case "int", "float", "number", "string", "bool", "null", "bytes":
			return true
		}
		return strings.HasPrefix(s, "{") || strings.HasPrefix(s, "[")
	}
	if written != nil {
		if cueKinds[written.kind] != gotType {
			got, gotType, wantType = m[2], m[4], m[3]
		}
		if b, err := canonjson.Marshal(written.value()); err == nil {
			got = string(b)
		}
	} else if isType(m[1]) && !isType(m[2]) {
		got, gotType, wantType = m[2], m[4], m[3]
	}
	return fmt.Sprintf("got %s %s, want %s", article(gotType), got, article(wantType))
}

func article(t string) string {
	switch t {
	case "int":
		return "an integer"
	case "float", "number":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "list":
		return "a list"
	case "struct":
		return "a mapping"
	case "null":
		return "null"
	}
	return t
}

func requiredHint(field string) string {
	switch field {
	case "name":
		return ": name the tool (1 to 64 letters, digits, '_' or '-')"
	case "description":
		return ": say what the tool does, for the model"
	case "type":
		return ": set type to one of " + typeNames
	case "items":
		return ": declare items, the schema of the array's elements (OpenAI and Gemini refuse an array without it)"
	case "approval":
		return ": approval_reason and approval_timeout apply to approval: required; add it, or remove them"
	case "server":
		return ": name the MCP server as the service's configuration names it"
	case "tool":
		return ": give the tool's name on the server"
	}
	return ""
}

// cueLabels returns keys as CUE writes them in a path: quoted where one is
// no identifier ("my.param", "or a zip code."). Only a problem's path needs
// them: the walk carries the keys as written.
func cueLabels(keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = cue.Str(k).String()
	}
	return out
}

// notAllowedHint says which keys fit where the refused key is written; of a
// key with a space and no value, which prose left in a flow mapping by a
// comma becomes, it also says to quote the value.
func notAllowedHint(tree *node, path []string) string {
	hint := keyHint(tree, path)
	if n, _ := tree.lookup(path); len(path) > 0 && strings.Contains(unquoteLabel(path[len(path)-1]), " ") && (n == nil || n.kind == kindNull) {
		hint += "; if it is the rest of a value, quote the value: in a flow mapping ({...}) a comma ends it"
	}
	return hint
}

func keyHint(tree *node, path []string) string {
	if len(path) == 0 {
		return ""
	}
	bad := unquoteLabel(path[len(path)-1])
	if len(path) == 1 {
		return fmt.Sprintf("a tool takes %s; %q is none of them", strings.Join(toolKeys, ", "), bad)
	}
	if path[0] == "annotations" {
		return fmt.Sprintf("annotations take title, destructiveHint, idempotentHint, openWorldHint; %q is none of them", bad)
	}
	if path[0] == "budgets" && len(path) == 2 {
		return fmt.Sprintf("budgets take per_activation and per_entity; %q is none of them", bad)
	}
	if path[0] == "budgets" && len(path) == 3 {
		return fmt.Sprintf("per_entity takes calls and window; %q is neither", bad)
	}
	if path[0] == "remote" {
		return fmt.Sprintf("remote takes server, tool, title, read_only_hint; %q is none of them", bad)
	}
	if len(path) >= 2 && (path[len(path)-2] == "params" || path[len(path)-2] == "properties") {
		return fmt.Sprintf("invalid param name %q: use 1 to 64 letters, digits, '_', '.' or '-'", bad)
	}
	parent, _ := tree.lookup(path[:len(path)-1])
	typ := ""
	if t, _, ok := parent.get("type"); ok && t.kind == kindString {
		typ = t.text
	}
	if _, ok := keywords[typ]; !ok || typ == "" {
		return fmt.Sprintf("%q is not allowed here", bad)
	}
	allowed := slices.Concat(keywords[""], keywords[typ])
	if path[len(path)-2] != "params" && path[len(path)-2] != "properties" {
		allowed = slices.DeleteFunc(allowed, func(s string) bool { return s == "required" })
	}
	for t, ks := range keywords {
		if t != "" && t != typ && slices.Contains(ks, bad) {
			return fmt.Sprintf("%s does not apply to type %s, which takes %s", bad, typ, strings.Join(allowed, ", "))
		}
	}
	return fmt.Sprintf("%q is no keyword of type %s, which takes %s", bad, typ, strings.Join(allowed, ", "))
}

// quotedValue returns the quoted value of a CUE "invalid value \"x\" (out of
// bound ...)" message, or the message when it has none.
func quotedValue(msg string) string {
	rest, ok := strings.CutPrefix(msg, "invalid value ")
	if !ok {
		return msg
	}
	if q, err := strconv.QuotedPrefix(rest); err == nil {
		return q
	}
	return msg
}

// boundValue is the number in CUE's message about a number out of its
// bounds ("invalid value 0 (out of bound >=1)"), or the message.
func boundValue(msg string) string {
	rest, ok := strings.CutPrefix(msg, "invalid value ")
	if !ok {
		return msg
	}
	if v, _, ok := strings.Cut(rest, " "); ok {
		return v
	}
	return msg
}
