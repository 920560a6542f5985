package effector_test

import (
	"context"
	"testing"
	"time"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/effector"
)

const benchArgs = `{"amount":30,"order_id":"o-1"}`

// BenchmarkProcess measures the effector's overhead per intent: Process with
// the in-memory store and signatures off, against calling the ToolRunner
// directly on the same tool and arguments in the same run (the baseline:
// argument validation, decoding and the call itself). The target is
// Process < 3x direct. Compare with:
//
//	go test -run '^$' -bench Process -count 10 ./effector | tee new.txt
//	go tool benchstat -col /path new.txt
//
// The tool is a refund with two arguments whose function only counts its
// calls, so that what is measured is the path, not the tool. Results are kept
// in the store for 10ms, so the store stays small however long the benchmark
// runs: a store that grows with b.N would make ns/op depend on b.N.
func BenchmarkProcess(b *testing.B) {
	tl := benchTools(b)
	refund, err := tl.table.Get("refund")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	newEffector := func(b *testing.B, tl *tools, store effector.DedupStore, opts ...effector.Option) *effector.Effector {
		return newEffector(b, tl, store, append(opts, effector.WithResultTTL(10*time.Millisecond))...)
	}

	b.Run("path=direct", func(b *testing.B) {
		r := effector.NewToolRunner()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := r.Run(ctx, refund, []byte(benchArgs)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("path=process", func(b *testing.B) {
		e := newEffector(b, tl, effector.NewMemoryStore())
		intents := benchIntents(b.N)
		b.ReportAllocs()
		b.ResetTimer()
		for _, in := range intents {
			if res, err := e.Process(ctx, in); err != nil || res.Status != toolreg.StatusOK {
				b.Fatalf("Process = %s %q, %v", res.Status, res.ErrorMessage, err)
			}
		}
	})
	b.Run("path=process-signed", func(b *testing.B) {
		e := newEffector(b, tl, effector.NewMemoryStore(), effector.WithVerify(effector.VerifyRequire, signingKeys))
		intents := benchIntents(b.N)
		for _, in := range intents {
			if err := in.SignHMAC("k1", signingKeys["k1"]); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		b.ResetTimer()
		for _, in := range intents {
			if res, err := e.Process(ctx, in); err != nil || res.Status != toolreg.StatusOK {
				b.Fatalf("Process = %s %q, %v", res.Status, res.ErrorMessage, err)
			}
		}
	})
	b.Run("path=redelivered", func(b *testing.B) {
		e := newEffector(b, tl, effector.NewMemoryStore())
		in := benchIntents(1)[0]
		if _, err := e.Process(ctx, in); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if res, err := e.Process(ctx, in); err != nil || res.Status != toolreg.StatusOK {
				b.Fatalf("Process = %s %q, %v", res.Status, res.ErrorMessage, err)
			}
		}
	})
}

// benchTools returns a table with one side-effecting tool, "refund", whose
// function does nothing but count its calls.
func benchTools(b *testing.B) *tools {
	one := 1.0
	amount := param("amount", toolreg.TypeInteger)
	amount.Minimum = &one
	bd := bindings.New([]*toolreg.Spec{spec("refund", true, param("order_id", toolreg.TypeString), amount)})
	tl := &tools{}
	bindings.Effect(bd, "refund", func(ctx context.Context, a refundArgs) (refundReceipt, error) {
		tl.calls.Add(1)
		return refundReceipt{RefundID: "rf-" + a.OrderID, Amount: a.Amount, Note: "remboursé"}, nil
	})
	bound, err := bd.Bind()
	if err != nil {
		b.Fatal(err)
	}
	tl.table = bound.Effector
	return tl
}

// benchIntents returns n distinct intents for the refund tool, made before the
// timer starts: staging them is the pipeline's cost, not the effector's.
func benchIntents(n int) []*toolreg.Intent {
	out := make([]*toolreg.Intent, n)
	for i := range out {
		out[i] = intentFor("refund", benchArgs, uint32(i))
	}
	return out
}
