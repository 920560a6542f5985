package bindingstest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/bindingstest"
)

type lookupArgs struct {
	CustomerID string `json:"customer_id"`
}

type refundArgs struct {
	OrderID string  `json:"order_id"`
	Amount  float64 `json:"amount"`
}

func lookup(context.Context, lookupArgs) (string, error) { return "ok", nil }
func refund(context.Context, refundArgs) (string, error) { return "ok", nil }

// recorder is a testing.TB that records a failure instead of failing the
// test that runs Check.
type recorder struct {
	testing.TB
	failed bool
	msg    string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed, r.msg = true, fmt.Sprintf(format, args...)
	panic(r) // stops Check, as FailNow stops a test
}

// check runs bindingstest.Check with a recorder and returns it.
func check(t *testing.T, path string, bind func(*bindings.Binder), opts ...bindings.Option) (r *recorder, bound *bindings.Bound) {
	r = &recorder{TB: t}
	defer func() {
		if p := recover(); p != nil && p != r {
			panic(p)
		}
	}()
	return r, bindingstest.Check(r, path, bind, opts...)
}

func TestMatchingFunctionsBind(t *testing.T) {
	t.Parallel()
	r, bound := check(t, "testdata/manifests", func(b *bindings.Binder) {
		bindings.ReadOnly(b, "lookup_customer", lookup)
		bindings.Effect(b, "refund", refund)
	})
	if r.failed {
		t.Fatalf("failed on functions that match: %s", r.msg)
	}
	if _, err := bound.Pipeline.Get("lookup_customer"); err != nil {
		t.Error(err)
	}
	if _, err := bound.Effector.Get("refund"); err != nil {
		t.Error(err)
	}
}

// A manifest edited out of step with its functions: every problem is listed,
// each at its place, not only the first.
func TestAManifestEditedOutOfStepFailsWithEveryProblem(t *testing.T) {
	t.Parallel()
	type wrongArgs struct {
		CustomerID int `json:"customer_id"`
	}
	r, _ := check(t, "testdata/manifests", func(b *bindings.Binder) {
		bindings.ReadOnly(b, "lookup_customer", func(context.Context, wrongArgs) (string, error) { return "", nil })
		bindings.ReadOnly(b, "lookup_custmer", lookup)
	})
	if !r.failed {
		t.Fatal("Check passed functions that do not bind")
	}
	for _, want := range []string{
		"bindingstest: the functions do not bind to the manifests in testdata/manifests:",
		"customer_id",                     // the param whose Go type disagrees
		"lookup_custmer",                  // the binding that names no tool
		"testdata/manifests/lookup.yaml:", // the unbound refund, at its manifest
		"refund",
		"(3 problems)",
	} {
		if !strings.Contains(r.msg, want) {
			t.Errorf("the failure does not say %q:\n%s", want, r.msg)
		}
	}
}

func TestAPipelineOnlyProcessNeedsNoEffects(t *testing.T) {
	t.Parallel()
	r, _ := check(t, "testdata/manifests", func(b *bindings.Binder) {
		bindings.ReadOnly(b, "lookup_customer", lookup)
	}, bindings.PipelineOnly())
	if r.failed {
		t.Fatalf("failed a pipeline-only process without effect bindings: %s", r.msg)
	}
}

func TestAnInvalidManifestFailsWithItsProblems(t *testing.T) {
	t.Parallel()
	r, _ := check(t, "testdata/bad", func(*bindings.Binder) {})
	if !r.failed || !strings.Contains(r.msg, "do not load") || !strings.Contains(r.msg, "testdata/bad/bad.yaml:4:3") {
		t.Errorf("failed %v with:\n%s", r.failed, r.msg)
	}
}

func TestNoManifestsFails(t *testing.T) {
	t.Parallel()
	r, _ := check(t, t.TempDir(), func(*bindings.Binder) {})
	if !r.failed || !strings.Contains(r.msg, "no manifests") {
		t.Errorf("failed %v with:\n%s", r.failed, r.msg)
	}
}
