package natsstore_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
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

// raceEnv makes this test binary a process of TestBudgetsHoldAcrossProcesses:
// it opens the store the variable names (a store URL) and races on its
// budgets.
const raceEnv = "TOOLREG_NATS_BUDGET_RACE"

func TestMain(m *testing.M) {
	if url := os.Getenv(raceEnv); url != "" {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		s, closeConn, err := natsstore.OpenURL(ctx, url)
		cancel()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		code := storetest.BudgetRaceProcess(s)
		closeConn()
		os.Exit(code)
	}
	os.Exit(natstest.Main(m, &cluster))
}

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

// The budget suite on the real cluster, on one bucket (each subtest's
// budget keys are its own), each subtest's store on a clock the suite
// moves: with the real clock, its 40 ms window had to outlast one write
// to three fsyncing replicas, which a loaded machine did not.
func TestBudgetConformance(t *testing.T) {
	t.Parallel()
	bucket := open(t, cluster).Bucket()
	js := jsOf(t, cluster)
	storetest.RunBudgetsWithClock(t, func(t *testing.T, now func() time.Time) effector.BudgetStore {
		s, err := natsstore.Open(ctxT(t), js, bucket, natsstore.WithClock(now))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// Four processes of sixteen workers each, each on its own connection to
// the cluster, race round after round on a budget: each round they admit
// exactly its limit.
func TestBudgetsHoldAcrossProcesses(t *testing.T) {
	t.Parallel()
	s := open(t, cluster)
	url := fmt.Sprintf("nats://%s/%s", strings.Join(cluster.Hosts(), ","), s.Bucket())
	storetest.RunBudgetRaceProcesses(t, 4, func(ctx context.Context) *exec.Cmd {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), raceEnv+"="+url)
		return cmd
	})
}
