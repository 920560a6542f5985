package toolreg_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/beam-agents/toolreg"
)

// A Spec built in Go is held to schema.cue's rules for tags and keywords.
func TestValidateRefusesBadTagsAndKeywords(t *testing.T) {
	t.Parallel()
	s := &toolreg.Spec{Name: "t", Description: "d.", Tags: []string{"ok", "two words", ""}, Keywords: []string{"fine", ""}}
	err := s.Validate()
	var de *toolreg.ToolDefinitionError
	if !errors.As(err, &de) {
		t.Fatalf("Validate = %v, want a *toolreg.ToolDefinitionError", err)
	}
	var paths []string
	for _, p := range de.Problems {
		paths = append(paths, p.Path)
	}
	if got := strings.Join(paths, " "); got != "tags.1 tags.2 keywords.1" {
		t.Errorf("problems at %q, want tags.1 tags.2 keywords.1:\n%v", got, err)
	}
	good := &toolreg.Spec{Name: "t", Description: "d.", Tags: []string{"billing", "crm:v2"}, Keywords: []string{"money back"}}
	if err := good.Validate(); err != nil {
		t.Errorf("Validate(good tags) = %v", err)
	}
}

func TestToolNotOfferedErrorIsAToolError(t *testing.T) {
	t.Parallel()
	var err error = &toolreg.ToolNotOfferedError{Name: "charge"}
	if !errors.Is(err, toolreg.ErrTool) {
		t.Error("errors.Is(ToolNotOfferedError, ErrTool) is false")
	}
	if got, want := err.Error(), `toolreg: tool "charge" was not offered for this turn`; !strings.HasPrefix(got, want) {
		t.Errorf("Error() = %q, want it to start %q", got, want)
	}
}
