package cli

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/beam-agents/toolreg"
)

func TestReportErrWritesOneFindingALineSortedByPosition(t *testing.T) {
	t.Parallel()
	pos := func(file string, line, col int) toolreg.Pos { return toolreg.Pos{File: file, Line: line, Col: col} }
	def := &toolreg.ToolDefinitionError{Problems: []toolreg.Problem{
		{Pos: pos("m/b.yaml", 9, 5), Tool: "refund", Path: "params.amount.tpye", Message: "field not allowed"},
		{Pos: pos("m/a.yaml", 3, 1), Tool: "lookup", Path: "description", Message: "empty description"},
		{Pos: pos("m/b.yaml", 2, 1), Tool: "refund", Path: "name", Message: "bad name"},
	}}
	dup := &toolreg.DuplicateToolError{Name: "refund", First: pos("m/b.yaml", 1, 1), Second: pos("m/c.cue", 3, 8)}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{
			"a definition error gives each problem, sorted by file, line and column",
			def,
			"m/a.yaml:3:1: lookup: description: empty description\n" +
				"m/b.yaml:2:1: refund: name: bad name\n" +
				"m/b.yaml:9:5: refund: params.amount.tpye: field not allowed\n",
		},
		{
			"a duplicate is a finding at its second place naming the first",
			dup,
			`m/c.cue:3:8: refund: name: tool "refund" is already declared at m/b.yaml:1:1: rename one or remove it` + "\n",
		},
		{
			"joined errors give every finding of each, merged in position order",
			errors.Join(def, dup),
			"m/a.yaml:3:1: lookup: description: empty description\n" +
				"m/b.yaml:2:1: refund: name: bad name\n" +
				"m/b.yaml:9:5: refund: params.amount.tpye: field not allowed\n" +
				`m/c.cue:3:8: refund: name: tool "refund" is already declared at m/b.yaml:1:1: rename one or remove it` + "\n",
		},
		{
			"a wrapped definition error is found through the wrapping",
			fmt.Errorf("loading: %w", &toolreg.ToolDefinitionError{Problems: def.Problems[:1]}),
			"m/b.yaml:9:5: refund: params.amount.tpye: field not allowed\n",
		},
		{
			"a problem without a file is printed without a position",
			&toolreg.ToolDefinitionError{Problems: []toolreg.Problem{{Tool: "charge", Path: "params.x", Message: "missing type"}}},
			"toolreg vet: charge: params.x: missing type\n",
		},
		{
			"a duplicate of tools built in Go names the tool",
			&toolreg.DuplicateToolError{Name: "charge"},
			`toolreg vet: charge: name: tool "charge" is declared twice: rename one or remove it` + "\n",
		},
		{
			"any other error is printed as it says itself, after the command's name",
			errors.New("disk on fire"),
			"toolreg vet: disk on fire\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stderr bytes.Buffer
			reportErr(&env{stderr: &stderr}, "vet", tt.err)
			if diff := cmp.Diff(tt.want, stderr.String()); diff != "" {
				t.Errorf("reportErr(%v) mismatch (-want +got):\n%s", tt.err, diff)
			}
		})
	}
}
