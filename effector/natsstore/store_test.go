package natsstore_test

import (
	"context"
	"fmt"
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
	js := jsOf(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := fmt.Sprintf("test-%d", buckets.Add(1))
	s, err := natsstore.Open(ctx, js, name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// jsOf returns a JetStream on a connection of its own to c.
func jsOf(t testing.TB, c *natstest.Cluster) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(c.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// The whole conformance suite, batch forms included, on the real
// three-node cluster: one bucket, since each subtest uses ids of its own.
func TestConformance(t *testing.T) {
	s := open(t, cluster)
	storetest.Run(t, func(t *testing.T) effector.DedupStore { return s })
}
