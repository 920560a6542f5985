package natsstream_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/effectortest"
)

// Stage sends results without waiting, and each wait returns only once its
// result is in the results stream: every result staged before any wait is
// readable once its wait returned. A second result for an intent (a
// republished answer) waits successfully and is dropped: the first stays.
func TestStagedResultsArePublishedOnceTheirWaitReturns(t *testing.T) {
	t.Parallel()
	q, _ := openQueue(t, cluster)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sink := q.Sink()
	var ins []*intent.Intent
	var waits []func() error
	for i := range 50 {
		in := effectortest.Intent("staged", int64(i), 0)
		ins = append(ins, in)
		wait, err := sink.Stage(ctx, intent.Result{IntentID: in.ID, EntityKey: in.EntityKey, Seq: in.Seq, Status: intent.StatusOK, Payload: []byte(`{"n":1}`)})
		if err != nil {
			t.Fatalf("Stage(%d): %v", i, err)
		}
		waits = append(waits, wait)
	}
	for i, wait := range waits {
		if err := wait(); err != nil {
			t.Fatalf("wait %d: %v", i, err)
		}
		r, ok, err := q.Result(ctx, ins[i].ID)
		if err != nil || !ok || r.IntentID != ins[i].ID || string(r.Payload) != `{"n":1}` {
			t.Fatalf("Result of staged intent %d after its wait: %+v, %v, %v; want its result", i, r, ok, err)
		}
	}
	again, err := sink.Stage(ctx, intent.Result{IntentID: ins[0].ID, Status: intent.StatusError, Payload: []byte(`{"n":2}`)})
	if err != nil {
		t.Fatal(err)
	}
	if err := again(); err != nil {
		t.Fatalf("waiting for a republished result: %v, want nil (the stream had one)", err)
	}
	r, _, err := q.Result(ctx, ins[0].ID)
	if err != nil || r.Status != intent.StatusOK || string(r.Payload) != `{"n":1}` {
		t.Fatalf("after a republished result, Result = %+v, %v; want the first one", r, err)
	}
	if rs, err := q.Results(ctx); err != nil || len(rs) != len(ins) {
		t.Fatalf("Results: %d, %v; want %d, one per intent", len(rs), err, len(ins))
	}
}

// A staged result the server cannot take fails its wait with Publish's
// clear error, so Serve's retries log what to do.
func TestAStagedResultLargerThanTheServerTakesFailsItsWait(t *testing.T) {
	t.Parallel()
	q, js := openQueue(t, cluster)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	in := effectortest.Intent("bigstaged", 1, 0)
	big := strings.Repeat("x", int(js.Conn().MaxPayload()))
	wait, err := q.Sink().Stage(ctx, intent.Result{IntentID: in.ID, Status: intent.StatusOK, Payload: []byte(`"` + big + `"`)})
	if err != nil {
		t.Fatalf("Stage: %v, want the error from its wait", err)
	}
	if err := wait(); err == nil || !strings.Contains(err.Error(), "max_payload") || !strings.Contains(err.Error(), in.ID) {
		t.Fatalf("waiting for a staged result larger than max_payload: %v; want an error naming the intent and max_payload", err)
	}
	if _, ok, err := q.Result(ctx, in.ID); err != nil || ok {
		t.Fatalf("Result of the refused result: %v, %v; want none", ok, err)
	}
}
