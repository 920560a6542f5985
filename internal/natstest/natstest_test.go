package natstest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/beam-agents/toolreg/internal/natstest"
)

// retry calls f with its own short timeout until it succeeds: right after a
// leader is lost, JetStream calls get no answer until a new one is elected.
func retry(t *testing.T, what string, f func(ctx context.Context) error) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := f(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func jetStream(t *testing.T, c *natstest.Cluster) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(c.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	return js
}

func bucket(t *testing.T, js jetstream.JetStream, name string) jetstream.KeyValue {
	t.Helper()
	var kv jetstream.KeyValue
	retry(t, "creating bucket "+name, func(ctx context.Context) (err error) {
		kv, err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: name, Replicas: 3})
		return err
	})
	return kv
}

// One cluster serves the fault tests below in turn: starting one takes seconds
// on a loaded machine.
func TestCluster(t *testing.T) {
	c := natstest.Start(t)
	if got := len(c.URLs()); got != natstest.Size {
		t.Fatalf("URLs: %d, want %d", got, natstest.Size)
	}
	js := jetStream(t, c)

	t.Run("an R3 bucket is replicated on every node", func(t *testing.T) {
		kv := bucket(t, js, "forms")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		st, err := kv.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		info := st.(*jetstream.KeyValueBucketStatus).StreamInfo()
		if info.Cluster == nil || len(info.Cluster.Replicas) != natstest.Size-1 {
			t.Fatalf("cluster info %+v: want a leader and %d replicas", info.Cluster, natstest.Size-1)
		}
		rev, err := kv.Create(ctx, "k", []byte("v1"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kv.Create(ctx, "k", []byte("v2")); !errors.Is(err, jetstream.ErrKeyExists) {
			t.Fatalf("second create: %v, want ErrKeyExists", err)
		}
		if _, err := kv.Update(ctx, "k", []byte("v2"), rev); err != nil {
			t.Fatal(err)
		}
		if _, err := kv.Update(ctx, "k", []byte("v3"), rev); err == nil {
			t.Fatal("an update at a stale revision succeeded")
		}
	})

	t.Run("an R3 stream takes publishes and deduplicates by message id, and its R3 consumer fails over", func(t *testing.T) {
		retry(t, "creating stream", func(ctx context.Context) error {
			_, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Replicas: 3})
			return err
		})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for i := 0; i < 2; i++ {
			if _, err := js.Publish(ctx, "s.x", []byte("one"), jetstream.WithMsgID("id-1")); err != nil {
				t.Fatal(err)
			}
		}
		s, err := js.Stream(ctx, "S")
		if err != nil {
			t.Fatal(err)
		}
		if n := s.CachedInfo().State.Msgs; n != 1 {
			t.Fatalf("%d messages after a duplicate publish, want 1", n)
		}
		if _, err := s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "C", Replicas: 3, AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
			t.Fatal(err)
		}
		lead := c.ConsumerLeader(t, "S", "C")
		cons, err := s.Consumer(ctx, "C")
		if err != nil {
			t.Fatal(err)
		}
		if got := cons.CachedInfo().Cluster.Leader; got != fmt.Sprint("n", lead) {
			t.Fatalf("ConsumerLeader = node %d, but the server says %q leads", lead, got)
		}
		c.StopNode(lead)
		if again := c.ConsumerLeader(t, "S", "C"); again == lead {
			t.Fatalf("node %d still leads the consumer after it stopped", lead)
		}
		c.RestartNode(t, lead)
	})

	t.Run("the bucket stays writable with its leader down, and the restarted leader serves as a replica", func(t *testing.T) {
		kv := bucket(t, js, "leader")
		retry(t, "put before", func(ctx context.Context) error { _, err := kv.Put(ctx, "before", []byte("1")); return err })
		lead := c.StreamLeader(t, "KV_leader")
		retry(t, "stream info", func(ctx context.Context) error {
			st, err := js.Stream(ctx, "KV_leader")
			if err != nil {
				return err
			}
			if got := st.CachedInfo().Cluster.Leader; got != fmt.Sprint("n", lead) {
				t.Fatalf("StreamLeader = node %d, but the server says %q leads", lead, got)
			}
			return nil
		})
		c.StopNode(lead)
		retry(t, "put with the leader down", func(ctx context.Context) error { _, err := kv.Put(ctx, "during", []byte("2")); return err })
		if again := c.StreamLeader(t, "KV_leader"); again == lead {
			t.Fatalf("node %d still leads after it stopped", lead)
		}
		c.RestartNode(t, lead)
		// With another node down, the restarted one is needed for a quorum:
		// writes succeed and reads find every key only if it rejoined.
		other := (lead + 1) % natstest.Size
		c.StopNode(other)
		retry(t, "put with the restarted node in the quorum", func(ctx context.Context) error { _, err := kv.Put(ctx, "after", []byte("3")); return err })
		for _, k := range []string{"before", "during", "after"} {
			retry(t, "get "+k, func(ctx context.Context) error { _, err := kv.Get(ctx, k); return err })
		}
		c.RestartNode(t, other)
	})

	t.Run("the whole cluster restarts from its store directories with its data", func(t *testing.T) {
		kv := bucket(t, js, "restart")
		for i := 0; i < 10; i++ {
			retry(t, "put", func(ctx context.Context) error {
				_, err := kv.Put(ctx, fmt.Sprintf("k%d", i), []byte("v"))
				return err
			})
		}
		c.Restart(t)
		for i := 0; i < 10; i++ {
			retry(t, "get after restart", func(ctx context.Context) error {
				e, err := kv.Get(ctx, fmt.Sprintf("k%d", i))
				if err == nil && string(e.Value()) != "v" {
					return fmt.Errorf("value %q", e.Value())
				}
				return err
			})
		}
	})
}
