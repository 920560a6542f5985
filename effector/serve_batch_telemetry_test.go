//go:build !toolreg_notelemetry

package effector_test

import (
	"testing"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/effectortest"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// TestServeCountsTheIntentsItAnswersFromABatchClaim: a batch's claim
// answers some intents itself: one already done (its stored result) and a
// replay asking for another call (REJECTED). Serve counts them as Process
// does: every intent answered is an execution, the replay's with its error
// type.
func TestServeCountsTheIntentsItAnswersFromABatchClaim(t *testing.T) {
	t.Parallel()
	reader := sdkmetric.NewManualReader()
	e, _ := effectortest.Effector(t, effector.NewMemoryStore(), effector.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	ins := intents("counted", 4)
	for _, in := range ins[:2] {
		if res, err := e.Process(testCtx(t), in); err != nil || res.Status != intent.StatusOK {
			t.Fatalf("Process: %v, %v", res.Status, err)
		}
	}
	replay := *ins[1]
	replay.ArgsJSON = []byte(`{"key":"someone-else"}`)
	src := newBatchSource([]*intent.Intent{ins[0], &replay, ins[2], ins[3]})
	sink := newResultSink()
	if err := effector.Serve(testCtx(t), src, sink, e, effector.WithServeLogger(quietLogger())); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if rs := sink.of(replay.ID); len(rs) != 1 || rs[0].Status != intent.StatusRejected {
		t.Fatalf("the replay: results %v; want one REJECTED", statuses(rs))
	}
	m := collect(t, reader)
	// 2 by Process, then 4 by Serve: the done one, the replay, two run.
	if got := counter(m, effector.MetricExecutions); got != 6 {
		t.Errorf("executions = %d, want 6: 2 processed, then 4 served (one answered from the store, one replay rejected, two run)", got)
	}
	if got := counter(m, effector.MetricExecutions, attribute.String("error.type", "non_deterministic")); got != 1 {
		t.Errorf("executions of the non-deterministic replay = %d, want 1, as Process counts it", got)
	}
}
