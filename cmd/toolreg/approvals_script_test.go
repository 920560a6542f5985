package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/natsstore"
	"github.com/beam-agents/toolreg/effector/pgstore"
	"github.com/beam-agents/toolreg/effector/redisstore"
	"github.com/beam-agents/toolreg/effector/sqlitestore"
	"github.com/beam-agents/toolreg/loader"
	"github.com/beam-agents/toolreg/runner"
)

const approvalManifest = `name: refund
description: Refund an order.
side_effect: true
params:
  order_id: {type: string}
  amount: {type: integer}
approval: required
approval_reason: Refunds need a second person.
approval_timeout: 1h
`

// openStore opens the store STORE names, as the CLI does.
func openStore(ts *testscript.TestScript, spec string) (effector.DedupStore, func()) {
	ctx := context.Background()
	switch {
	case strings.HasPrefix(spec, "redis://"):
		opts, err := redis.ParseURL(spec)
		ts.Check(err)
		rdb := redis.NewClient(opts)
		return redisstore.New(rdb), func() { rdb.Close() }
	case strings.HasPrefix(spec, "nats://"):
		ns, closeConn, err := natsstore.OpenURL(ctx, spec)
		ts.Check(err)
		return ns, closeConn
	case strings.HasPrefix(spec, "postgres"):
		pool, err := pgxpool.New(ctx, spec)
		ts.Check(err)
		ps, err := pgstore.Open(ctx, pool)
		ts.Check(err)
		return ps, func() { ps.Close(); pool.Close() }
	}
	ss, err := sqlitestore.Open(ctx, ts.MkAbs(spec))
	ts.Check(err)
	return ss, func() { ss.Close() }
}

// approvalEffector is an effector on store whose refund tool requires
// approval; runs counts its executions.
func approvalEffector(ts *testscript.TestScript, store effector.DedupStore, runs *int) (*bindings.Bound, *effector.Effector) {
	specs, err := loader.LoadFS(fstest.MapFS{"m.yaml": {Data: []byte(approvalManifest)}}, "m.yaml")
	ts.Check(err)
	b := bindings.New(specs)
	bindings.Effect(b, "refund", func(_ context.Context, a struct {
		OrderID string `json:"order_id"`
		Amount  int    `json:"amount"`
	}) (map[string]any, error) {
		*runs++
		return map[string]any{"refunded": a.Amount, "order_id": a.OrderID}, nil
	})
	bound, err := b.Bind()
	ts.Check(err)
	eff, err := effector.New(bound.Effector, store)
	ts.Check(err)
	return bound, eff
}

// stageapprovals STORE ENTITY N: an effector records N pending approvals of
// refund (order o-1 ... o-N, amount 100*i), staged by activation ENTITY,
// and their ids are written to ids.txt, one per line.
func stageApprovals(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: stageapprovals STORE ENTITY N")
	}
	store, closeStore := openStore(ts, args[0])
	defer closeStore()
	var runs int
	bound, eff := approvalEffector(ts, store, &runs)
	var n int
	_, err := fmt.Sscan(args[2], &n)
	ts.Check(err)
	var ids []string
	for i := 1; i <= n; i++ {
		act := runner.NewActivation(bound.Pipeline, []byte(args[1]), int64(i), runner.WithClock(time.Now))
		raw, _ := json.Marshal(map[string]any{"order_id": fmt.Sprint("o-", i), "amount": 100 * i})
		in, err := act.Act("refund", raw)
		ts.Check(err)
		res, err := eff.Process(context.Background(), in)
		ts.Check(err)
		if res.Status.String() != "OK" {
			ts.Fatalf("Process(APPROVAL) = %s %s", res.Status, res.ErrorMessage)
		}
		ids = append(ids, in.ID)
	}
	ts.Check(os.WriteFile(ts.MkAbs("ids.txt"), []byte(strings.Join(ids, "\n")+"\n"), 0o644))
	for i, id := range ids {
		ts.Setenv(fmt.Sprint("APPROVAL", i+1), id)
	}
	if runs != 0 {
		ts.Fatalf("staging ran the tool %d times", runs)
	}
}

// resume STORE ID: an effector holding refund carries out the decision on
// ID, and prints the execution's status and payload, and how many times the
// tool ran in this effector.
func resumeApproval(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: resume STORE ID")
	}
	store, closeStore := openStore(ts, args[0])
	defer closeStore()
	var runs int
	_, eff := approvalEffector(ts, store, &runs)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := eff.Resume(ctx, args[1])
	if neg {
		if err == nil {
			ts.Fatalf("resume succeeded: %s", res.Status)
		}
		fmt.Fprintf(ts.Stdout(), "resume: %v\n", err)
		return
	}
	ts.Check(err)
	fmt.Fprintf(ts.Stdout(), "%s %s %s runs=%d\n", res.Status, res.Payload, res.ErrorMessage, runs)
}
