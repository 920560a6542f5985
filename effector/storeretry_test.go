//go:build !toolreg_notelemetry

package effector_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/syncbuf"
)

// TestEveryStoreRetryOfProcessIsLoggedAndCounted is the issue 31 item on
// store writes Process retries: a Complete that fails N times and then
// succeeds gives the intent its result, and leaves N warn lines naming the
// intent, the store operation and the store's error, a count of N in
// MetricStoreRetries by operation and in Stats, and N "retry" events on
// the complete phase's span.
func TestEveryStoreRetryOfProcessIsLoggedAndCounted(t *testing.T) {
	const n = 3
	store := &completeFailing{DedupStore: effector.NewMemoryStore(), n: n}
	var buf syncbuf.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	rig := newTelemetryRig(t, store, effector.WithLogger(logger), effector.WithBackoff(time.Millisecond, 4*time.Millisecond))
	in := readFixture(t, "tool_intent.bin")

	res, err := rig.e.Process(testCtx(t), in)
	if err != nil || res.Status != intent.StatusOK {
		t.Fatalf("Process = %s %q, %v; want OK once Complete succeeds", res.Status, res.ErrorMessage, err)
	}
	if got := store.completes.Load(); got != n+1 {
		t.Fatalf("Complete was called %d times, want %d", got, n+1)
	}

	var retries []map[string]any
	lines, err := buf.JSONLines()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		if strings.Contains(l["msg"].(string), "retrying") {
			retries = append(retries, l)
		}
	}
	if len(retries) != n {
		t.Fatalf("%d retry lines logged, want %d:\n%s", len(retries), n, buf.String())
	}
	for i, l := range retries {
		if l["level"] != "WARN" || l["intent_id"] != in.ID || l["operation"] != "complete" ||
			!strings.Contains(l["error"].(string), "disk is full") || l["attempt"] != float64(i+1) {
			t.Errorf("retry line %d = %v; want WARN with intent_id %s, operation complete, the store's error and attempt %d", i, l, in.ID, i+1)
		}
	}

	m := collect(t, rig.reader)
	if got := counter(m, effector.MetricStoreRetries, attribute.String("toolreg.store.operation", "complete")); got != n {
		t.Errorf("%s{toolreg.store.operation=complete} = %d, want %d", effector.MetricStoreRetries, got, n)
	}
	if got := rig.e.Stats().StoreRetries; got != n {
		t.Errorf("Stats().StoreRetries = %d, want %d", got, n)
	}
	complete := spansByName(rig.exp.GetSpans())["effector.complete"]
	events := 0
	for _, ev := range complete.Events {
		if ev.Name == "retry" {
			events++
		}
	}
	if events != n {
		t.Errorf("the complete span has %d retry events, want %d: %v", events, n, complete.Events)
	}
}
