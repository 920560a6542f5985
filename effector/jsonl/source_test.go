package jsonl_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/beam-agents/toolreg/effector/jsonl"
	"github.com/beam-agents/toolreg/internal/effectortest"
)

func TestSourceRefusesHostileLines(t *testing.T) {
	t.Parallel()
	good := effectortest.Intent("e", 5, 0)
	long := `{"intent_id":"` + strings.Repeat("x", 1000) + `"}`
	input := long + "\n" + `{"intent_id":"a","bogus":1}` + "\n" + "\xff\xfe\n" + effectortest.Line(t, good)
	src := jsonl.NewSource(strings.NewReader(input), "in", jsonl.WithMaxLineBytes(400))
	tests := []struct {
		name string
		want string
	}{
		{"a line longer than the limit is refused, naming the limit", "in:1: line is longer than 400 bytes"},
		{"an unknown field is refused, naming its line", `in:2: toolreg: decoding ToolIntent JSON`},
		{"bytes that are not JSON are refused, naming their line", "in:3:"},
	}
	for _, tt := range tests {
		d, err := src.Receive(context.Background())
		if err != nil {
			t.Fatalf("%s: Receive: %v", tt.name, err)
		}
		if d.Err == nil || !strings.Contains(d.Err.Error(), tt.want) || d.Intent != nil {
			t.Errorf("%s: delivery error = %v, want one containing %q and no intent", tt.name, d.Err, tt.want)
		}
	}
	d, err := src.Receive(context.Background())
	if err != nil || d.Err != nil || d.Intent == nil || d.Intent.ID != good.ID || d.Pos != "in:4" {
		t.Fatalf("the good line after the bad ones: %+v, %v; want its intent at in:4", d, err)
	}
	if _, err := src.Receive(context.Background()); !errors.Is(err, io.EOF) {
		t.Fatalf("Receive after the last line = %v, want io.EOF", err)
	}
}

func TestOpenFileRefusesABadCheckpoint(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	intents := filepath.Join(dir, "in.jsonl")
	effectortest.WriteFile(t, intents, "\n")
	tests := []struct {
		name, checkpoint, want string
	}{
		{"garbage is refused", "hello", `holds "hello", want "<byte offset> <line number>"`},
		{"an offset past the end is refused", "99 3\n", "past the end of"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			effectortest.WriteFile(t, intents+".ack", tt.checkpoint)
			_, err := jsonl.OpenFile(intents)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("OpenFile = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// FuzzSource feeds arbitrary bytes: every line becomes a delivery with an
// intent or an error, positions count up, and nothing panics or hangs.
func FuzzSource(f *testing.F) {
	f.Add([]byte("{}\n\n{\"intent_id\":\"x\"}\n"))
	f.Add([]byte("\xff\n" + strings.Repeat("a", 300)))
	f.Add([]byte(`{"intent_id":"i","entity_key":"ZQ==","seq":"1","step_index":0,"tool_name":"apply","args_json":"{}","created_at_ms":1,"expires_at_ms":2,"attempt":1,"kind":"TOOL"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		src := jsonl.NewSource(bytes.NewReader(data), "f", jsonl.WithMaxLineBytes(64))
		prev := 0
		for {
			d, err := src.Receive(context.Background())
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				t.Fatalf("Receive: %v", err)
			}
			if (d.Intent == nil) == (d.Err == nil) {
				t.Fatalf("delivery at %s has intent %v and error %v: want exactly one", d.Pos, d.Intent != nil, d.Err)
			}
			if d.Err != nil && (d.Offset < 0 || d.Offset > int64(len(data)) || !bytes.HasPrefix(data[d.Offset:], d.Bytes)) {
				t.Fatalf("delivery at %s: bytes %q at offset %d are not the input's", d.Pos, d.Bytes, d.Offset)
			}
			var te *jsonl.TornLineError
			if errors.As(d.Err, &te) && bytes.HasSuffix(data, []byte("\n")) {
				t.Fatalf("delivery at %s reports a torn line, but the input ends with a newline", d.Pos)
			}
			if d.Intent != nil && !bytes.Contains(data, []byte("\n")) {
				t.Fatalf("delivery at %s is an intent read from input with no newline at all", d.Pos)
			}
			var line int
			if _, err := fmt.Sscanf(d.Pos, "f:%d", &line); err != nil || line <= prev {
				t.Fatalf("position %q after line %d", d.Pos, prev)
			}
			prev = line
		}
	})
}
