package effector_test

import (
	"context"
	"testing"
	"time"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/cputime"
)

const benchArgs = `{"amount":30,"order_id":"o-1"}`

// BenchmarkProcess measures the effector's overhead per intent: Process with
// the in-memory store and signatures off, against calling the ToolRunner
// directly on the same tool and arguments in the same run (the baseline:
// argument validation, decoding and the call itself). The target is
// Process < 3x direct. Compare with:
//
//	go test -run '^$' -bench 'Process/' -count 10 ./effector | tee new.txt
//	go tool benchstat -col /path new.txt
//
// On a shared or virtual machine whose speed drifts, run -count 1 ten times
// instead and take the median of each run's process/direct ratio: the two
// paths then run back to back. BenchmarkProcessParts says where the
// difference goes.
//
// The tool is a refund with two arguments whose function only counts its
// calls, so that what is measured is the path, not the tool. The intents come
// from a ring of 8192, built before the timer starts, and results are kept
// in the store for 1ms: by the time the ring comes round, an intent's result
// has expired and it is claimed and executed afresh. So every Process call
// takes the full path, and neither the store nor the heap grows with b.N,
// which would make ns/op depend on b.N (and make the garbage collector, not
// the effector, the thing measured).
func BenchmarkProcess(b *testing.B) {
	tl := benchTools(b)
	refund, err := tl.table.Get("refund")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	newEffector := func(b *testing.B, tl *tools, store effector.DedupStore, opts ...effector.Option) *effector.Effector {
		return newEffector(b, tl, store, append(opts, effector.WithResultTTL(time.Millisecond))...)
	}

	b.Run("path=direct", func(b *testing.B) {
		// The arguments of the same ring of intents that Process gets, so
		// both paths read them from the same memory.
		ring := benchIntents(benchRing)
		r := effector.NewToolRunner()
		b.ReportAllocs()
		done := cputime.Report(b)
		i := 0
		for b.Loop() {
			in := ring[i%len(ring)]
			i++
			if _, err := r.Run(ctx, refund, in.ArgsJSON); err != nil {
				b.Fatal(err)
			}
		}
		done()
	})
	b.Run("path=process", func(b *testing.B) {
		tl.calls.Store(0)
		e := newEffector(b, tl, effector.NewMemoryStore())
		i := processRing(b, e, benchIntents(benchRing))
		if n := tl.calls.Load(); n != int32(i) {
			b.Fatalf("%d Process calls executed the tool %d times: some took the done path", i, n)
		}
	})
	b.Run("path=process-cancelable", func(b *testing.B) {
		// A caller whose context can end, as Serve's and an MCP request's
		// can: the function runs on a goroutine of its own, so Process can
		// return when the caller gives up.
		tl.calls.Store(0)
		e := newEffector(b, tl, effector.NewMemoryStore())
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		i := processRingCtx(ctx, b, e, benchIntents(benchRing))
		if n := tl.calls.Load(); n != int32(i) {
			b.Fatalf("%d Process calls executed the tool %d times: some took the done path", i, n)
		}
	})
	b.Run("path=process-signed", func(b *testing.B) {
		e := newEffector(b, tl, effector.NewMemoryStore(), effector.WithVerify(effector.VerifyRequire, signingKeys))
		ring := benchIntents(benchRing)
		for _, in := range ring {
			if err := in.SignHMAC("k1", signingKeys["k1"]); err != nil {
				b.Fatal(err)
			}
		}
		processRing(b, e, ring)
	})
	b.Run("path=redelivered", func(b *testing.B) {
		// The default result time-to-live: every call after the first is
		// answered from the store.
		e, err := effector.New(tl.table, effector.NewMemoryStore(), effector.WithLogger(quietLogger()), effector.WithClock(fixedClock))
		if err != nil {
			b.Fatal(err)
		}
		in := benchIntents(1)[0]
		if _, err := e.Process(ctx, in); err != nil {
			b.Fatal(err)
		}
		tl.calls.Store(0)
		b.ReportAllocs()
		done := cputime.Report(b)
		for b.Loop() {
			if res, err := e.Process(ctx, in); err != nil || res.Status != intent.StatusOK {
				b.Fatalf("Process = %s %q, %v", res.Status, res.ErrorMessage, err)
			}
		}
		done()
		if n := tl.calls.Load(); n != 0 {
			b.Fatalf("a done intent was executed %d more times", n)
		}
	})
}

// processRing processes the ring's intents in turn, b.N of them, each of
// which must come out OK, and returns how many it processed.
func processRing(b *testing.B, e *effector.Effector, ring []*intent.Intent) int {
	return processRingCtx(context.Background(), b, e, ring)
}

// processRingCtx is processRing under ctx.
func processRingCtx(ctx context.Context, b *testing.B, e *effector.Effector, ring []*intent.Intent) int {
	b.ReportAllocs()
	done := cputime.Report(b)
	i := 0
	for b.Loop() {
		in := ring[i%len(ring)]
		i++
		if res, err := e.Process(ctx, in); err != nil || res.Status != intent.StatusOK {
			b.Fatalf("Process = %s %q, %v", res.Status, res.ErrorMessage, err)
		}
	}
	done()
	return i
}

// benchTools returns a table with one side-effecting tool, "refund", whose
// function does nothing but count its calls.
func benchTools(b *testing.B) *tools {
	amount := param("amount", toolreg.TypeInteger)
	amount.Minimum = "1"
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

const benchRing = 8192

// benchIntents returns n distinct intents for the refund tool, made before the
// timer starts: staging them is the pipeline's cost, not the effector's.
func benchIntents(n int) []*intent.Intent {
	out := make([]*intent.Intent, n)
	for i := range out {
		out[i] = intentFor("refund", benchArgs, uint32(i))
	}
	return out
}
