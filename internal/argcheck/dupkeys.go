package argcheck

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// duplicateKeys returns a Problem for each object member, at any depth,
// whose key was already given in the same object. encoding/json keeps the
// last value of a repeated key, so a reviewer reading the staged JSON and
// the tool reading its decoded value could see different values: such
// arguments are refused, not resolved. args must be valid JSON.
func duplicateKeys(args []byte) []Problem {
	if bytes.Count(args, []byte{'"'}) < 4 { // two keys at least
		return nil
	}
	type frame struct {
		obj     bool
		keys    map[string]bool
		wantKey bool   // in an object: the next string is a key
		path    string // JSON Pointer of this object or array
		key     string // the member being read, in an object
		index   int    // the element being read, in an array
	}
	var stack []frame
	var ps []Problem
	// child is the path of the value now being read, and marks it read.
	child := func() string {
		if len(stack) == 0 {
			return ""
		}
		f := &stack[len(stack)-1]
		if f.obj {
			f.wantKey = true
			return f.path + "/" + escapeToken(f.key)
		}
		f.index++
		return f.path + "/" + strconv.Itoa(f.index-1)
	}
	d := json.NewDecoder(bytes.NewReader(args))
	d.UseNumber()
	for {
		tok, err := d.Token()
		if err != nil {
			return ps
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			stack = append(stack, frame{obj: tok == json.Delim('{'), wantKey: true, path: child()})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			continue
		}
		if n := len(stack); n > 0 && stack[n-1].obj && stack[n-1].wantKey {
			f := &stack[n-1]
			key, _ := tok.(string)
			if f.keys == nil {
				f.keys = make(map[string]bool)
			}
			if f.keys[key] {
				ps = append(ps, Problem{Path: f.path + "/" + escapeToken(key), Want: "each key once in an object (which of two values would count is ambiguous)", Got: strconv.Quote(key) + " given again: send it once, with the value you mean"})
			}
			f.keys[key] = true
			f.key, f.wantKey = key, false
			continue
		}
		child()
	}
}
