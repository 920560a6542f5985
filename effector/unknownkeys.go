package effector

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/canonjson"
	"github.com/beam-agents/toolreg/intent"
)

// dropUnknownKeys returns the intent's arguments with the keys t's manifest
// does not declare removed when t is named in WithDropUnknownKeys, logging
// their paths; otherwise, or when the arguments are not one JSON object, the
// arguments as they came (validation then says what is wrong with them).
func (e *Effector) dropUnknownKeys(ctx context.Context, in *intent.Intent, t *toolreg.Tool) []byte {
	if !e.cfg.dropUnknown[t.Name()] {
		return in.ArgsJSON
	}
	d := json.NewDecoder(bytes.NewReader(in.ArgsJSON))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil || m == nil {
		return in.ArgsJSON
	}
	if _, err := d.Token(); err != io.EOF {
		return in.ArgsJSON // text after the object: refused as it stands
	}
	var dropped []string
	dropMembers(m, t.Spec().Params, "", &dropped)
	if len(dropped) == 0 {
		return in.ArgsJSON
	}
	out, err := canonjson.Marshal(m)
	if err != nil {
		return in.ArgsJSON
	}
	slices.Sort(dropped)
	e.cfg.logger.InfoContext(ctx, "effector: dropped argument keys the manifest does not declare (WithDropUnknownKeys)",
		"intent_id", in.ID, "tool", t.Name(), "keys", dropped)
	return out
}

// dropMembers deletes from the object m the members ps does not declare, and
// recurses into the ones it does.
func dropMembers(m map[string]any, ps []*toolreg.Param, path string, dropped *[]string) {
	for k, v := range m {
		i := slices.IndexFunc(ps, func(p *toolreg.Param) bool { return p.Name == k })
		if i < 0 {
			delete(m, k)
			*dropped = append(*dropped, path+"/"+pointerToken(k))
			continue
		}
		dropIn(v, &ps[i].Schema, path+"/"+pointerToken(k), dropped)
	}
}

// dropIn recurses into v, a value of schema s.
func dropIn(v any, s *toolreg.Schema, path string, dropped *[]string) {
	switch x := v.(type) {
	case map[string]any:
		if s.Type != toolreg.TypeObject {
			return
		}
		if s.AdditionalProperties != nil {
			// A map: every key is allowed; its values follow their schema.
			for k, e := range x {
				i := slices.IndexFunc(s.Properties, func(p *toolreg.Param) bool { return p.Name == k })
				if i >= 0 {
					dropIn(e, &s.Properties[i].Schema, path+"/"+pointerToken(k), dropped)
				} else {
					dropIn(e, s.AdditionalProperties, path+"/"+pointerToken(k), dropped)
				}
			}
			return
		}
		dropMembers(x, s.Properties, path, dropped)
	case []any:
		if s.Items == nil {
			return
		}
		for i, e := range x {
			dropIn(e, s.Items, path+"/"+strconv.Itoa(i), dropped)
		}
	}
}

// pointerToken escapes a key as a JSON Pointer token.
func pointerToken(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}
