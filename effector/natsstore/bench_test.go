package natsstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/beam-agents/toolreg/effector"
)

// BenchmarkClaimComplete claims and completes intents on the three-node
// cluster: one call at a time, in batches of 100 (ClaimBatch then
// CompleteBatch), and, as the floor the batches are compared with in the
// same run, the bare JetStream work a batch needs: per intent one create
// and one update of a key, 100 at a time, published asynchronously. Each
// op is one intent.
func BenchmarkClaimComplete(b *testing.B) {
	const batch = 100
	result := []byte(`{"status":"OK","payload":"done"}`)
	ctx := context.Background()
	run := 0
	ids := func(n int) []string {
		run++
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("bench-%d-%d", run, i)
		}
		return out
	}

	b.Run("one by one", func(b *testing.B) {
		s := open(b, cluster)
		b.ReportAllocs()
		for _, id := range ids(b.N) {
			c, err := s.Claim(ctx, id, call, time.Minute)
			if err != nil || c.State != effector.Claimed {
				b.Fatal(c.State, err)
			}
			if err := s.Complete(ctx, id, c.Token, result, time.Hour); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("batches of 100", func(b *testing.B) {
		s := open(b, cluster)
		b.ReportAllocs()
		all := ids(b.N)
		for start := 0; start < len(all); start += batch {
			part := all[start:min(len(all), start+batch)]
			reqs := make([]effector.ClaimRequest, len(part))
			for i, id := range part {
				reqs[i] = effector.ClaimRequest{IntentID: id, Call: call, Lease: time.Minute}
			}
			out := make([]effector.ClaimOutcome, len(reqs))
			s.ClaimBatch(ctx, reqs, out)
			comps := make([]effector.Completion, len(reqs))
			for i, o := range out {
				if o.Err != nil || o.Claim.State != effector.Claimed {
					b.Fatal(o.Claim.State, o.Err)
				}
				comps[i] = effector.Completion{IntentID: part[i], Token: o.Claim.Token, Result: result, TTL: time.Hour}
			}
			errs := make([]error, len(comps))
			s.CompleteBatch(ctx, comps, errs)
			for _, err := range errs {
				if err != nil {
					b.Fatal(err)
				}
			}
		}
	})

	b.Run("floor: a create and an update per intent, 100 async at a time", func(b *testing.B) {
		s := open(b, cluster)
		js := jsOf(b, cluster)
		subject := "$KV." + s.Bucket() + ".floor-%d"
		b.ReportAllocs()
		for start := 0; start < b.N; start += batch {
			n := min(b.N-start, batch)
			publish := func(i int, rev uint64) jetstream.PubAckFuture {
				m := &nats.Msg{Subject: fmt.Sprintf(subject, start+i), Data: result, Header: nats.Header{}}
				f, err := js.PublishMsgAsync(m, jetstream.WithExpectLastSequencePerSubject(rev), jetstream.WithMsgTTL(time.Hour))
				if err != nil {
					b.Fatal(err)
				}
				return f
			}
			wait := func(fs []jetstream.PubAckFuture) []uint64 {
				revs := make([]uint64, len(fs))
				for i, f := range fs {
					select {
					case ack := <-f.Ok():
						revs[i] = ack.Sequence
					case err := <-f.Err():
						b.Fatal(err)
					}
				}
				return revs
			}
			fs := make([]jetstream.PubAckFuture, n)
			for i := range n {
				fs[i] = publish(i, 0)
			}
			revs := wait(fs)
			for i := range n {
				fs[i] = publish(i, revs[i])
			}
			wait(fs)
		}
	})
}
