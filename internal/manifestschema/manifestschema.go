package manifestschema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/literal"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"
)

// Draft is the JSON Schema dialect Generate writes.
const Draft = "https://json-schema.org/draft/2020-12/schema"

// Error is a construct of the CUE source that Generate does not translate.
type Error struct {
	Pos     token.Position
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("manifestschema: %s: %s: translate it in internal/manifestschema, or write the schema with the constructs its doc lists", e.Pos, e.Message)
}

// Generate translates the CUE schema src (read from filename) into the JSON
// Schema of one document of definition root (such as "#Tool"), indented, with
// a final newline. Only the definitions root reaches are written, in $defs.
func Generate(filename string, src []byte, root, title string) ([]byte, error) {
	f, err := parser.ParseFile(filename, src, parser.ParseComments)
	if err != nil {
		return nil, fmt.Errorf("manifestschema: %w", err)
	}
	g := &gen{defs: map[string]*ast.Field{}, out: map[string]any{}}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.Field)
		if !ok {
			continue // package clause, imports and comments; an import is refused where it is used
		}
		if name, ok := defName(fd.Label); ok {
			if prev, ok := g.defs[name]; ok {
				// CUE unifies the declarations of one definition: two
				// structs are one struct of both fields, closed as one.
				merged, err := mergeDecls(prev, fd)
				if err != nil {
					return nil, err
				}
				fd = merged
			}
			g.defs[name] = fd
		}
	}
	if _, ok := g.defs[root]; !ok {
		return nil, fmt.Errorf("manifestschema: %s declares no definition %s", filename, root)
	}
	g.need(root)
	for len(g.queue) > 0 {
		name := g.queue[0]
		g.queue = g.queue[1:]
		fd := g.defs[name]
		s, err := g.expr(fd.Value, scope{open: true}) // closed at each use
		if err != nil {
			return nil, err
		}
		g.out[strings.TrimPrefix(name, "#")] = describe(s, fd)
	}
	rootDef := g.out[strings.TrimPrefix(root, "#")]
	doc := map[string]any{
		"$schema": Draft,
		"title":   title,
		"$ref":    "#/$defs/" + strings.TrimPrefix(root, "#"),
		"$defs":   g.out,
	}
	if m, ok := rootDef.(map[string]any); ok {
		if d, ok := m["description"]; ok {
			doc["description"] = d
		}
	}
	if g.isStruct(root) {
		doc["unevaluatedProperties"] = false
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("manifestschema: %w", err)
	}
	return b.Bytes(), nil
}

// mergeDecls returns the one definition that two declarations of it, both
// struct literals, make: the first's fields, then the second's, with the
// first's doc comment. Any other pair is refused with its position.
func mergeDecls(a, b *ast.Field) (*ast.Field, error) {
	as, aok := unparen(a.Value).(*ast.StructLit)
	bs, bok := unparen(b.Value).(*ast.StructLit)
	if !aok || !bok {
		return nil, &Error{Pos: b.Pos().Position(), Message: "a definition declared twice is translated only when both declarations are structs"}
	}
	m := *a
	m.Value = &ast.StructLit{Lbrace: as.Lbrace, Elts: append(append([]ast.Decl(nil), as.Elts...), bs.Elts...), Rbrace: as.Rbrace}
	return &m, nil
}

type gen struct {
	defs  map[string]*ast.Field
	out   map[string]any
	seen  []string
	queue []string
}

// need queues definition name for $defs, once.
func (g *gen) need(name string) {
	if !slices.Contains(g.seen, name) {
		g.seen = append(g.seen, name)
		g.queue = append(g.queue, name)
	}
}

// isStruct reports whether definition name is a struct, which a use closes.
func (g *gen) isStruct(name string) bool {
	fd, ok := g.defs[name]
	if !ok {
		return false
	}
	_, ok = unparen(fd.Value).(*ast.StructLit)
	return ok
}

// scope is where an expression stands.
type scope struct {
	// open: a struct here is not closed; it is embedded, or a definition's
	// own body (closed where it is used).
	open bool
	// fields are the fields of the enclosing struct, for a comprehension's
	// condition or an index to name.
	fields map[string]*ast.Field
}

func fail(n ast.Node, format string, args ...any) error {
	return &Error{Pos: n.Pos().Position(), Message: fmt.Sprintf(format, args...)}
}

func defName(l ast.Label) (string, bool) {
	if id, ok := l.(*ast.Ident); ok && strings.HasPrefix(id.Name, "#") {
		return id.Name, true
	}
	return "", false
}

// describe adds fd's doc comment to s as its description.
func describe(s any, fd *ast.Field) any {
	var doc []string
	for _, cg := range ast.Comments(fd) {
		if cg.Doc {
			doc = append(doc, strings.TrimSpace(cg.Text()))
		}
	}
	if len(doc) == 0 {
		return s
	}
	m, ok := s.(map[string]any)
	if !ok { // true: any value
		m = map[string]any{}
	}
	if _, has := m["description"]; has {
		m = map[string]any{"allOf": []any{m}}
	}
	m["description"] = strings.Join(doc, "\n")
	return m
}

var basic = map[string]string{"string": "string", "int": "integer", "number": "number", "bool": "boolean", "null": "null"}

func (g *gen) expr(e ast.Expr, sc scope) (any, error) {
	switch e := e.(type) {
	case *ast.ParenExpr:
		return g.expr(e.X, sc)
	case *ast.Ident:
		if e.Name == "_" {
			return true, nil
		}
		if t, ok := basic[e.Name]; ok {
			return map[string]any{"type": t}, nil
		}
		if _, ok := g.defs[e.Name]; ok {
			g.need(e.Name)
			ref := map[string]any{"$ref": "#/$defs/" + strings.TrimPrefix(e.Name, "#")}
			if !sc.open && g.isStruct(e.Name) {
				ref["unevaluatedProperties"] = false
			}
			return ref, nil
		}
		return nil, fail(e, "%s is not a definition of the file or a basic type", e.Name)
	case *ast.BasicLit:
		v, err := lit(e)
		if err != nil {
			return nil, err
		}
		return map[string]any{"const": v}, nil
	case *ast.UnaryExpr:
		return g.unary(e)
	case *ast.BinaryExpr:
		switch e.Op {
		case token.AND:
			a, err := g.expr(e.X, sc)
			if err != nil {
				return nil, err
			}
			b, err := g.expr(e.Y, sc)
			if err != nil {
				return nil, err
			}
			return merge(a, b), nil
		case token.OR:
			return g.disjunction(e, sc)
		}
		return nil, fail(e, "the operator %s", e.Op)
	case *ast.StructLit:
		return g.structLit(e, sc)
	case *ast.ListLit:
		return g.list(e, sc)
	}
	return nil, fail(e, "the expression %T", e)
}

// lit is a literal's JSON value.
func lit(e *ast.BasicLit) (any, error) {
	switch e.Kind {
	case token.STRING:
		s, err := literal.Unquote(e.Value)
		if err != nil {
			return nil, fail(e, "%v", err)
		}
		return s, nil
	case token.INT, token.FLOAT:
		if !jsonNumber.MatchString(e.Value) {
			return nil, fail(e, "the number %s, which JSON does not write so", e.Value)
		}
		return json.Number(e.Value), nil
	case token.TRUE:
		return true, nil
	case token.FALSE:
		return false, nil
	case token.NULL:
		return nil, nil
	}
	return nil, fail(e, "the literal %s", e.Value)
}

var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

func (g *gen) unary(e *ast.UnaryExpr) (any, error) {
	bl, ok := unparen(e.X).(*ast.BasicLit)
	if !ok {
		return nil, fail(e, "%s applied to a %T, not a literal", e.Op, e.X)
	}
	v, err := lit(bl)
	if err != nil {
		return nil, err
	}
	_, isStr := v.(string)
	_, isNum := v.(json.Number)
	switch {
	case e.Op == token.MAT && isStr:
		return map[string]any{"type": "string", "pattern": v}, nil
	case e.Op == token.NMAT && isStr:
		return map[string]any{"type": "string", "not": map[string]any{"pattern": v}}, nil
	case e.Op == token.NEQ:
		return map[string]any{"not": map[string]any{"const": v}}, nil
	case e.Op == token.GEQ && isNum:
		return map[string]any{"minimum": v}, nil
	case e.Op == token.GTR && isNum:
		return map[string]any{"exclusiveMinimum": v}, nil
	case e.Op == token.LEQ && isNum:
		return map[string]any{"maximum": v}, nil
	case e.Op == token.LSS && isNum:
		return map[string]any{"exclusiveMaximum": v}, nil
	}
	return nil, fail(e, "the constraint %s%s", e.Op, bl.Value)
}

// merge is a & b: one schema when their keywords do not overlap, else allOf.
func merge(a, b any) any {
	if a == true {
		return b
	}
	if b == true {
		return a
	}
	ma, okA := a.(map[string]any)
	mb, okB := b.(map[string]any)
	if okA && okB {
		overlap := false
		for k := range mb {
			if _, ok := ma[k]; ok {
				overlap = true
			}
		}
		if !overlap {
			m := make(map[string]any, len(ma)+len(mb))
			for k, v := range ma {
				m[k] = v
			}
			for k, v := range mb {
				m[k] = v
			}
			return m
		}
	}
	return map[string]any{"allOf": []any{a, b}}
}

// disjunction is a | b | ...: anyOf its branches, and the one marked * as
// the default. A literal branch a type branch already admits is left out
// ("bool | *false" is a boolean that defaults to false).
func (g *gen) disjunction(e *ast.BinaryExpr, sc scope) (any, error) {
	var branches []ast.Expr
	var walk func(x ast.Expr)
	walk = func(x ast.Expr) {
		if b, ok := unparen(x).(*ast.BinaryExpr); ok && b.Op == token.OR {
			walk(b.X)
			walk(b.Y)
			return
		}
		branches = append(branches, x)
	}
	walk(e)
	var out []any
	var def any
	hasDef := false
	for _, b := range branches {
		if u, ok := unparen(b).(*ast.UnaryExpr); ok && u.Op == token.MUL {
			bl, ok := unparen(u.X).(*ast.BasicLit)
			if !ok || hasDef {
				return nil, fail(u, "a default that is not one literal")
			}
			v, err := lit(bl)
			if err != nil {
				return nil, err
			}
			def, hasDef = v, true
			b = u.X
		}
		s, err := g.expr(b, sc)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	out = slices.DeleteFunc(out, func(s any) bool {
		m, ok := s.(map[string]any)
		if !ok || len(m) != 1 {
			return false
		}
		c, ok := m["const"]
		return ok && slices.ContainsFunc(out, func(o any) bool { return admits(o, c) })
	})
	var s map[string]any
	if len(out) == 1 {
		if m, ok := out[0].(map[string]any); ok {
			s = m
		}
	}
	if s == nil {
		s = map[string]any{"anyOf": out}
	}
	if hasDef {
		s["default"] = def
	}
	return s, nil
}

// admits reports whether schema s is {"type": t} alone with v of type t.
func admits(s, v any) bool {
	m, ok := s.(map[string]any)
	if !ok || len(m) != 1 {
		return false
	}
	switch m["type"] {
	case "boolean":
		_, ok = v.(bool)
	case "string":
		_, ok = v.(string)
	case "number":
		_, ok = v.(json.Number)
	case "integer":
		n, isNum := v.(json.Number)
		ok = isNum && !strings.ContainsAny(string(n), ".eE")
	case "null":
		ok = v == nil
	default:
		ok = false
	}
	return ok
}

func (g *gen) list(e *ast.ListLit, sc scope) (any, error) {
	sc.open = false
	s := map[string]any{"type": "array"}
	var prefix []any
	rest := any(false) // a list without ... has exactly its elements
	for i, el := range e.Elts {
		if ell, ok := el.(*ast.Ellipsis); ok {
			if i != len(e.Elts)-1 {
				return nil, fail(ell, "... before the list's last element")
			}
			rest = true
			if ell.Type != nil {
				t, err := g.expr(ell.Type, sc)
				if err != nil {
					return nil, err
				}
				rest = t
			}
			continue
		}
		t, err := g.expr(el, sc)
		if err != nil {
			return nil, err
		}
		prefix = append(prefix, t)
	}
	if len(prefix) > 0 {
		if !slices.ContainsFunc(prefix, func(p any) bool { return p != true }) {
			s["minItems"] = len(prefix) // [_, ...]: at least that many of anything
		} else {
			s["prefixItems"] = prefix
			s["minItems"] = len(prefix)
		}
	}
	if rest != true {
		s["items"] = rest
	}
	return s, nil
}

func (g *gen) structLit(e *ast.StructLit, sc scope) (any, error) {
	fields := map[string]*ast.Field{}
	for _, el := range e.Elts {
		if fd, ok := el.(*ast.Field); ok {
			if name, ok := fieldName(fd.Label); ok {
				fields[name] = fd
			}
		}
	}
	inner := scope{fields: fields} // a field's own struct is closed
	props := map[string]any{}
	var required []string
	var all []any
	s := map[string]any{"type": "object"}
	closed := !sc.open
	for _, el := range e.Elts {
		switch el := el.(type) {
		case *ast.Field:
			if l, ok := el.Label.(*ast.ListLit); ok {
				if err := g.pattern(s, l, el, inner); err != nil {
					return nil, err
				}
				continue
			}
			name, ok := fieldName(el.Label)
			if !ok {
				return nil, fail(el, "the field label %T", el.Label)
			}
			if strings.HasPrefix(name, "#") || strings.HasPrefix(name, "_") {
				return nil, fail(el, "a definition or hidden field (%s) inside a struct", name)
			}
			v, err := g.expr(el.Value, inner)
			if err != nil {
				return nil, err
			}
			v = describe(v, el)
			if prev, ok := props[name]; ok {
				v = merge(prev, v)
			}
			props[name] = v
			if el.Constraint == token.NOT || el.Constraint == token.ILLEGAL && !filledIn(el.Value) {
				if !slices.Contains(required, name) {
					required = append(required, name)
				}
			}
		case *ast.EmbedDecl:
			v, err := g.embed(el.Expr, fields)
			if err != nil {
				return nil, err
			}
			all = append(all, v)
		case *ast.Comprehension:
			v, err := g.comprehension(el, fields)
			if err != nil {
				return nil, err
			}
			all = append(all, v)
		case *ast.Ellipsis:
			if el.Type != nil {
				return nil, fail(el, "a typed ... in a struct")
			}
			closed = false
		case *ast.Attribute, *ast.CommentGroup:
		default:
			return nil, fail(el, "the declaration %T", el)
		}
	}
	if len(props) > 0 {
		s["properties"] = props
	}
	if len(required) > 0 {
		s["required"] = required
	}
	if len(all) > 0 {
		s["allOf"] = all
	}
	if closed {
		s["unevaluatedProperties"] = false
	}
	return s, nil
}

func fieldName(l ast.Label) (string, bool) {
	switch l := l.(type) {
	case *ast.Ident:
		return l.Name, true
	case *ast.BasicLit:
		if l.Kind == token.STRING {
			s, err := literal.Unquote(l.Value)
			return s, err == nil
		}
	}
	return "", false
}

// filledIn reports whether a regular field's value is one CUE fills in when
// a document leaves the field out: a literal, or a disjunction with a default.
func filledIn(v ast.Expr) bool {
	switch v := unparen(v).(type) {
	case *ast.BasicLit:
		return true
	case *ast.BinaryExpr:
		if v.Op != token.OR {
			return false
		}
		_, ok := defaultOf(v)
		return ok
	}
	return false
}

// defaultOf returns the literal marked * in disjunction v.
func defaultOf(v ast.Expr) (any, bool) {
	switch v := unparen(v).(type) {
	case *ast.BinaryExpr:
		if v.Op == token.OR {
			if d, ok := defaultOf(v.X); ok {
				return d, true
			}
			return defaultOf(v.Y)
		}
	case *ast.UnaryExpr:
		if v.Op == token.MUL {
			if bl, ok := unparen(v.X).(*ast.BasicLit); ok {
				if d, err := lit(bl); err == nil {
					return d, true
				}
			}
		}
	}
	return nil, false
}

// pattern translates [L]: v into s.
func (g *gen) pattern(s map[string]any, l *ast.ListLit, fd *ast.Field, sc scope) error {
	if len(l.Elts) != 1 {
		return fail(l, "a pattern label with %d elements", len(l.Elts))
	}
	label := l.Elts[0]
	if a, ok := label.(*ast.Alias); ok {
		label = a.Expr
	}
	v, err := g.expr(fd.Value, sc)
	if err != nil {
		return err
	}
	v = describe(v, fd)
	re, err := g.regexpOf(label)
	if err != nil {
		return err
	}
	if re == "" {
		s["additionalProperties"] = v
		return nil
	}
	pp, _ := s["patternProperties"].(map[string]any)
	if pp == nil {
		pp = map[string]any{}
		s["patternProperties"] = pp
	}
	pp[re] = v
	return nil
}

// regexpOf returns the regular expression a pattern label matches: "" for
// string (any name), the pattern of =~"re", or of a definition that is one.
func (g *gen) regexpOf(e ast.Expr) (string, error) {
	switch x := unparen(e).(type) {
	case *ast.Ident:
		if x.Name == "string" {
			return "", nil
		}
		if fd, ok := g.defs[x.Name]; ok {
			return g.regexpOf(fd.Value)
		}
	case *ast.UnaryExpr:
		if bl, ok := x.X.(*ast.BasicLit); ok && x.Op == token.MAT && bl.Kind == token.STRING {
			return literal.Unquote(bl.Value)
		}
	}
	return "", fail(e, "a pattern label that is not string, =~\"re\" or a definition of one")
}

// embed translates an embedding: a definition (left open, the embedding
// struct closes it) or an index #defs[field], a case for each key of #defs.
func (g *gen) embed(e ast.Expr, fields map[string]*ast.Field) (any, error) {
	ix, ok := unparen(e).(*ast.IndexExpr)
	if !ok {
		return g.expr(e, scope{open: true, fields: fields})
	}
	table, ok := unparen(ix.X).(*ast.Ident)
	key, ok2 := unparen(ix.Index).(*ast.Ident)
	if !ok || !ok2 || g.defs[table.Name] == nil || fields[key.Name] == nil {
		return nil, fail(ix, "an index that is not #definition[field of the same struct]")
	}
	body, ok := unparen(g.defs[table.Name].Value).(*ast.StructLit)
	if !ok {
		return nil, fail(ix, "%s is not a struct", table.Name)
	}
	var keys []any
	var cases []any
	for _, el := range body.Elts {
		fd, ok := el.(*ast.Field)
		if !ok {
			return nil, fail(el, "%s holds a %T, not only fields", table.Name, el)
		}
		k, ok := fieldName(fd.Label)
		if !ok {
			return nil, fail(fd, "%s has a key that is not a name", table.Name)
		}
		then, err := g.expr(fd.Value, scope{open: true})
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
		cases = append(cases, map[string]any{
			"if":   map[string]any{"properties": map[string]any{key.Name: map[string]any{"const": k}}, "required": []any{key.Name}},
			"then": then,
		})
	}
	// A value that is no key of the table is an error in CUE too.
	cases = append(cases, map[string]any{"properties": map[string]any{key.Name: map[string]any{"enum": keys}}})
	return map[string]any{"allOf": cases}, nil
}

// comprehension translates "if cond { fields }" to if/then.
func (g *gen) comprehension(c *ast.Comprehension, fields map[string]*ast.Field) (any, error) {
	if len(c.Clauses) != 1 || c.Fallback != nil {
		return nil, fail(c, "a comprehension with more than one if clause")
	}
	ifc, ok := c.Clauses[0].(*ast.IfClause)
	if !ok {
		return nil, fail(c, "a %T comprehension", c.Clauses[0])
	}
	cond, err := g.cond(ifc.Condition, fields)
	if err != nil {
		return nil, err
	}
	body, ok := c.Value.(*ast.StructLit)
	if !ok {
		return nil, fail(c, "a comprehension whose value is not a struct")
	}
	then, err := g.structLit(body, scope{open: true, fields: fields})
	if err != nil {
		return nil, err
	}
	m := then.(map[string]any)
	delete(m, "type")
	return map[string]any{"if": cond, "then": m}, nil
}

// cond translates a comprehension's condition over fields of the struct to
// a schema that holds exactly when CUE's condition is true: a field left out
// reads as its default, and a field with no default, left out, makes a
// comparison false (CUE does not emit the comprehension).
func (g *gen) cond(e ast.Expr, fields map[string]*ast.Field) (any, error) {
	switch x := unparen(e).(type) {
	case *ast.UnaryExpr:
		if x.Op == token.NOT {
			c, err := g.cond(x.X, fields)
			if err != nil {
				return nil, err
			}
			return map[string]any{"not": c}, nil
		}
	case *ast.BinaryExpr:
		switch x.Op {
		case token.LAND, token.LOR:
			a, err := g.cond(x.X, fields)
			if err != nil {
				return nil, err
			}
			b, err := g.cond(x.Y, fields)
			if err != nil {
				return nil, err
			}
			op := "allOf"
			if x.Op == token.LOR {
				op = "anyOf"
			}
			return map[string]any{op: []any{a, b}}, nil
		case token.EQL, token.NEQ:
			id, ok := unparen(x.X).(*ast.Ident)
			if !ok || fields[id.Name] == nil {
				return nil, fail(x, "a comparison whose left side is not a field of the same struct")
			}
			present := map[string]any{"required": []any{id.Name}}
			if _, ok := unparen(x.Y).(*ast.BottomLit); ok {
				if x.Op == token.NEQ {
					return present, nil
				}
				return map[string]any{"not": present}, nil
			}
			bl, ok := unparen(x.Y).(*ast.BasicLit)
			if !ok {
				return nil, fail(x, "a comparison with something other than a literal or _|_")
			}
			v, err := lit(bl)
			if err != nil {
				return nil, err
			}
			def, hasDef := defaultOf(fields[id.Name].Value)
			isDef := hasDef && jsonEqual(def, v)
			test := map[string]any{"const": v}
			if x.Op == token.NEQ {
				test = map[string]any{"not": test}
			}
			s := map[string]any{"properties": map[string]any{id.Name: test}}
			// Left out, the field reads as its default, or, with none, the
			// condition is false.
			if matchesAbsent := hasDef && (isDef == (x.Op == token.EQL)); !matchesAbsent {
				s["required"] = []any{id.Name}
			}
			return s, nil
		}
	}
	return nil, fail(e, "the condition %T", e)
}

func jsonEqual(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

func unparen(e ast.Expr) ast.Expr {
	for {
		p, ok := e.(*ast.ParenExpr)
		if !ok {
			return e
		}
		e = p.X
	}
}

// Title is the title of the manifest format's JSON Schema.
const Title = "toolreg tool manifest (one YAML or JSON document)"

// Manifest is the JSON Schema of one manifest document, translated from the
// text of schema.cue: its #Tool definition.
func Manifest(schemaCUE []byte) ([]byte, error) {
	return Generate("schema.cue", schemaCUE, "#Tool", Title)
}
