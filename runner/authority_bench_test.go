package runner_test

import (
	"context"
	"testing"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/internal/cputime"
	"github.com/beam-agents/toolreg/runner"
)

// BenchmarkAuthority measures one valid inline call through an activation's
// RunTool twice in the same run: impl=plain, the benchmark tool of
// BenchmarkValidCall as it is; impl=checked, the same tool declaring a
// scope and a per_activation budget, called by a principal holding the
// scope, so that every call checks the scope and counts against the budget.
// Target (issue 36): checked at most 10% over plain. On a machine shared
// with other work compare cpu-ns/op, the process's CPU time per call, which
// ns/op inflates by the time the benchmark waited for a CPU:
//
//	go test -run X -bench Authority -count 10 ./runner | go tool benchstat -col /impl -
func BenchmarkAuthority(b *testing.B) {
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		checked bool
	}{{"impl=plain", false}, {"impl=checked", true}} {
		b.Run(c.name, func(b *testing.B) {
			spec := benchSpec()
			var opts []runner.ActivationOption
			if c.checked {
				spec.Scopes = []string{"catalogue:read"}
				spec.Budgets = &toolreg.Budgets{PerActivation: 1000000}
				opts = append(opts, runner.WithPrincipal(&toolreg.Principal{Subject: "ana", Scopes: []string{"orders:read", "catalogue:read"}}))
			}
			bd := bindings.New([]*toolreg.Spec{spec})
			bindings.ReadOnly(bd, "search", benchSearch)
			bound, err := bd.Bind()
			if err != nil {
				b.Fatal(err)
			}
			var act *runner.Activation
			b.ReportAllocs()
			defer cputime.Report(b)()
			for i := 0; b.Loop(); i++ {
				if i%500000 == 0 { // a new activation before the budget runs out, for both
					act = runner.NewActivation(bound.Pipeline, []byte("bench"), int64(i), opts...)
				}
				res, err := act.RunTool(ctx, "search", benchCall)
				if err != nil {
					b.Fatal(err)
				}
				sinkHits = res.(benchResult).Hits
			}
			checkHits(b)
		})
	}
}
