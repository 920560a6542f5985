package effector_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
)

type ctxKey struct{}

// ctxEffector returns an effector whose one tool, "probe", runs f with the
// context the effector gives it, under a timeout of timeout.
func ctxEffector(t *testing.T, timeout time.Duration, f func(ctx context.Context) error) *effector.Effector {
	t.Helper()
	b := bindings.New([]*toolreg.Spec{spec("probe", true)})
	bindings.Effect(b, "probe", func(ctx context.Context, _ noArgs) (string, error) {
		return "ok", f(ctx)
	})
	bound, err := b.Bind()
	if err != nil {
		t.Fatal(err)
	}
	e, err := effector.New(bound.Effector, effector.NewMemoryStore(), effector.WithClock(fixedClock),
		effector.WithLogger(quietLogger()), effector.WithToolTimeout("probe", timeout))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestTheFunctionsContextBehavesAsAContextWithTimeout holds the context a
// tool function runs with to what context.WithTimeout of the caller's would
// do, however the function uses it: the effector makes its cancelation only
// when the function first waits on it, and these are the paths around that.
func TestTheFunctionsContextBehavesAsAContextWithTimeout(t *testing.T) {
	t.Parallel()
	const timeout = 30 * time.Millisecond
	wantTimeoutCause := func(t *testing.T, what string, err error) {
		t.Helper()
		var te *effector.TimeoutError
		if !errors.As(err, &te) || te.Tool != "probe" {
			t.Errorf("context.Cause of %s = %v, want the probe's *effector.TimeoutError", what, err)
		}
	}
	process := func(t *testing.T, ctx context.Context, e *effector.Effector) intent.Result {
		t.Helper()
		res, err := e.Process(ctx, intentFor("probe", `{}`, 1))
		if err != nil {
			t.Fatalf("Process: %v", err)
		}
		return res
	}

	t.Run("a function that only polls Err sees DeadlineExceeded and the timeout as the cause", func(t *testing.T) {
		t.Parallel()
		var err, cause error
		e := ctxEffector(t, timeout, func(ctx context.Context) error {
			if err := ctx.Err(); err != nil {
				t.Errorf("ctx.Err() at the start = %v, want nil", err)
			}
			for ctx.Err() == nil {
				time.Sleep(time.Millisecond)
			}
			err, cause = ctx.Err(), context.Cause(ctx)
			return err
		})
		if res := process(t, context.Background(), e); res.Status != intent.StatusError {
			t.Fatalf("Process = %s %q, want ERROR for the timeout", res.Status, res.ErrorMessage)
		}
		if err != context.DeadlineExceeded {
			t.Errorf("ctx.Err() after the timeout = %v, want context.DeadlineExceeded", err)
		}
		wantTimeoutCause(t, "the function's ctx", cause)
	})

	t.Run("a context derived in the function is canceled by the timeout, with its cause", func(t *testing.T) {
		t.Parallel()
		var cause error
		e := ctxEffector(t, timeout, func(ctx context.Context) error {
			child, cancel := context.WithCancel(ctx)
			defer cancel()
			<-child.Done()
			cause = context.Cause(child)
			return child.Err()
		})
		if res := process(t, context.Background(), e); res.Status != intent.StatusError {
			t.Fatalf("Process = %s %q, want ERROR for the timeout", res.Status, res.ErrorMessage)
		}
		wantTimeoutCause(t, "a context derived from the function's", cause)
	})

	t.Run("a context kept past the return is canceled, whether or not it was waited on", func(t *testing.T) {
		t.Parallel()
		for _, waited := range []bool{false, true} {
			var kept context.Context
			e := ctxEffector(t, time.Minute, func(ctx context.Context) error {
				if waited {
					select {
					case <-ctx.Done():
						t.Error("ctx was done while the function ran")
					default:
					}
				}
				kept = ctx
				return nil
			})
			if res := process(t, context.Background(), e); res.Status != intent.StatusOK {
				t.Fatalf("Process = %s %q, want OK", res.Status, res.ErrorMessage)
			}
			if err := kept.Err(); err != context.Canceled {
				t.Errorf("waited=%v: Err of the kept ctx after Process = %v, want context.Canceled", waited, err)
			}
			select {
			case <-kept.Done():
			case <-time.After(10 * time.Second):
				t.Fatalf("waited=%v: the kept ctx's Done is still open after Process returned", waited)
			}
			if cause := context.Cause(kept); cause != context.Canceled {
				t.Errorf("waited=%v: context.Cause of the kept ctx = %v, want context.Canceled", waited, cause)
			}
		}
	})

	t.Run("the caller's values reach the function, its cancelation and deadline do not", func(t *testing.T) {
		t.Parallel()
		stop := errors.New("the caller is shutting down")
		base, cancelBase := context.WithTimeout(context.WithValue(context.Background(), ctxKey{}, "trace-1"), 30*time.Second)
		defer cancelBase()
		caller, cancel := context.WithCancelCause(base)
		defer cancel(nil)
		var value any
		var errAfter error
		var deadline time.Time
		running, polled := make(chan struct{}), make(chan struct{})
		e := ctxEffector(t, time.Minute, func(ctx context.Context) error {
			value = ctx.Value(ctxKey{})
			deadline, _ = ctx.Deadline()
			close(running)
			<-polled
			errAfter = ctx.Err()
			return nil
		})
		go func() {
			<-running
			cancel(stop)
		}()
		_, err := e.Process(caller, intentFor("probe", `{}`, 1))
		if !errors.Is(err, stop) {
			t.Fatalf("Process after the caller canceled = %v, want an error with the caller's cause", err)
		}
		close(polled)
		res, err := e.Process(testCtx(t), intentFor("probe", `{}`, 1))
		if err != nil || res.Status != intent.StatusOK {
			t.Fatalf("redelivered Process = %s %q, %v; want the function's real outcome, OK", res.Status, res.ErrorMessage, err)
		}
		if value != "trace-1" {
			t.Errorf("ctx.Value of the caller's key = %v, want trace-1", value)
		}
		if errAfter != nil {
			t.Errorf("ctx.Err() after the caller canceled = %v, want nil: only the tool timeout ends a function", errAfter)
		}
		if until := time.Until(deadline); until < 50*time.Second {
			t.Errorf("ctx.Deadline() is %v away, want the tool's timeout (1m), not the caller's", until)
		}
	})

	t.Run("the caller's values reach a function that waits on its context", func(t *testing.T) {
		t.Parallel()
		var value any
		e := ctxEffector(t, time.Minute, func(ctx context.Context) error {
			_ = ctx.Done()
			value = ctx.Value(ctxKey{})
			return nil
		})
		process(t, context.WithValue(context.Background(), ctxKey{}, "trace-2"), e)
		if value != "trace-2" {
			t.Errorf("ctx.Value of the caller's key = %v, want trace-2", value)
		}
	})
}

// TestRacingReturnsAndTimeoutsNeverCrossIntents runs, on eight workers,
// intents whose functions return about when their timeout passes, so that
// returns and timeouts race, among intents whose functions return at once:
// every intent gets its own result, OK or a timeout, a function sees only its
// own intent, and no instant function is timed out by another's timer.
func TestRacingReturnsAndTimeoutsNeverCrossIntents(t *testing.T) {
	t.Parallel()
	const timeout = 50 * time.Millisecond
	type probeArgs struct {
		Racy bool `json:"racy"`
	}
	b := bindings.New([]*toolreg.Spec{spec("probe", true, param("racy", toolreg.TypeBoolean))})
	var crossed atomic.Int32
	bindings.Effect(b, "probe", func(ctx context.Context, a probeArgs) (string, error) {
		info, _ := effector.IntentFrom(ctx)
		if a.Racy {
			time.Sleep(timeout)
		}
		if info2, _ := effector.IntentFrom(ctx); info2.ID != info.ID {
			crossed.Add(1)
		}
		return info.ID, nil
	})
	bound, err := b.Bind()
	if err != nil {
		t.Fatal(err)
	}
	e, err := effector.New(bound.Effector, effector.NewMemoryStore(), effector.WithClock(fixedClock),
		effector.WithLogger(quietLogger()), effector.WithToolTimeout("probe", timeout))
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 40
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				step := uint32(w*each + i)
				racy := i%2 == 0
				in := intentFor("probe", fmt.Sprintf(`{"racy":%v}`, racy), step)
				res, err := e.Process(context.Background(), in)
				if err != nil {
					t.Errorf("Process(step %d): %v", step, err)
					continue
				}
				if res.IntentID != in.ID {
					t.Errorf("step %d: result for intent %s, want %s", step, res.IntentID, in.ID)
				}
				switch {
				case res.Status == intent.StatusOK:
					if want := `"` + in.ID + `"`; string(res.Payload) != want {
						t.Errorf("step %d: payload %s, want %s: the function saw another intent", step, res.Payload, want)
					}
				case !racy:
					t.Errorf("step %d: a function that returns at once got %s %q", step, res.Status, res.ErrorMessage)
				case res.Status != intent.StatusError || !strings.Contains(res.ErrorMessage, "timeout"):
					t.Errorf("step %d: %s %q, want OK or a timeout", step, res.Status, res.ErrorMessage)
				}
			}
		})
	}
	wg.Wait()
	if n := crossed.Load(); n != 0 {
		t.Errorf("IntentFrom changed under %d running functions", n)
	}
}
