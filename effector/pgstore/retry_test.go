package pgstore

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/pgtest"
	"github.com/beam-agents/toolreg/internal/syncbuf"
)

// TestAPostgresRestartMidProcessIsLoggedAndCounted: Postgres goes down while
// the tool runs and comes back a while later. Process records the result
// once it is back, and every failed Complete it tried in between is a warn
// line naming the intent and the store's error, and counts once in
// effector.MetricStoreRetries (operation "complete") and in Stats: the
// restart the issue saw absorbed with no trace leaves one.
func TestAPostgresRestartMidProcessIsLoggedAndCounted(t *testing.T) {
	t.Parallel()
	srv := pgtest.Start(t)
	s := openForTest(t, migrated(t, srv))
	stopped := make(chan struct{})
	var logs syncbuf.Buffer
	reader := sdkmetric.NewManualReader()
	e := refundEffector(t, s, func(ctx context.Context, a refundArgs) (map[string]any, error) {
		srv.Stop() // the database crashes while the effect is applied
		close(stopped)
		return map[string]any{"refunded": a.Amount}, nil
	},
		effector.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))),
		effector.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))),
		effector.WithLease(time.Minute), effector.WithStoreTimeout(5*time.Second),
		effector.WithBackoff(20*time.Millisecond, 200*time.Millisecond))
	in := refundIntent(1)

	type outcome struct {
		res intent.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := e.Process(context.Background(), in)
		done <- outcome{res, err}
	}()
	<-stopped
	time.Sleep(300 * time.Millisecond) // some Completes fail meanwhile
	srv.Restart(t)
	o := <-done
	if o.err != nil || o.res.Status != intent.StatusOK {
		t.Fatalf("Process across the restart = %s %q, %v; want OK", o.res.Status, o.res.ErrorMessage, o.err)
	}

	var retries int
	lines, err := logs.JSONLines()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		if strings.Contains(l["msg"].(string), "retrying") {
			retries++
			if l["level"] != "WARN" || l["intent_id"] != in.ID || l["operation"] != "complete" || l["error"] == "" {
				t.Errorf("retry line %v: want WARN with the intent id, the operation and the store's error", l)
			}
		}
	}
	t.Logf("%d retries logged", retries)
	if retries == 0 {
		t.Fatalf("no retry logged across a restart of the database:\n%s", logs.String())
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var counted int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != effector.MetricStoreRetries {
				continue
			}
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				if v, ok := dp.Attributes.Value(attribute.Key("toolreg.store.operation")); ok && v.AsString() == "complete" {
					counted += dp.Value
				}
			}
		}
	}
	if counted != int64(retries) || e.Stats().StoreRetries != uint64(retries) {
		t.Errorf("%d retries logged, %d counted in %s, %d in Stats; want the same", retries, counted, effector.MetricStoreRetries, e.Stats().StoreRetries)
	}
	if !storeState(t, s.pool, in.ID) {
		t.Errorf("the result is not recorded in Postgres")
	}
}
