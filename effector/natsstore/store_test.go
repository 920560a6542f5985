package natsstore_test

import (
	"context"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/natsstore"
	"github.com/beam-agents/toolreg/effector/storetest"
	"github.com/beam-agents/toolreg/internal/natstest"
)

// cluster is the three-node cluster every test of the package shares; a
// test that stops nodes starts its own.
var cluster *natstest.Cluster

func TestMain(m *testing.M) { os.Exit(natstest.Main(m, &cluster)) }

var buckets atomic.Int32

// open opens a store on a new bucket of c, on a connection of its own.
func open(t testing.TB, c *natstest.Cluster, opts ...natsstore.Option) *natsstore.Store {
	t.Helper()
	js, err := jetstream.New(c.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := "t" + time.Now().Format("150405") + "-" + string(rune('a'+buckets.Add(1)%26)) + itoa(int(buckets.Load()))
	s, err := natsstore.Open(ctx, js, name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func itoa(n int) string {
	b := []byte{}
	for {
		b = append([]byte{byte('0' + n%10)}, b...)
		if n /= 10; n == 0 {
			return string(b)
		}
	}
}

// The whole conformance suite, batch forms included, on the real
// three-node cluster: one bucket, since each subtest uses ids of its own.
func TestConformance(t *testing.T) {
	s := open(t, cluster)
	storetest.Run(t, func(t *testing.T) effector.DedupStore { return s })
}
