package pgqueue_test

import (
	"context"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/pgqueue"
	"github.com/beam-agents/toolreg/effector/pgstore"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/registry"
)

// The outbox pattern: a pipeline step writes its own state and stages its
// intents in one transaction, so the effectors see the intents only if the
// step commits; then an effector serves the queue with the dedup store in
// the same database. (It needs a database: see TestOutbox for it run against
// a real one.)
func ExampleEnqueue() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	if err := pgstore.Migrate(ctx, pool); err != nil { // or: toolreg migrate $DATABASE_URL
		log.Fatal(err)
	}

	// The pipeline: the ticket's new state and the refund intent commit
	// together, or neither does.
	var refund *intent.Intent // from runner.Activation.Act
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE tickets SET state = 'refunding' WHERE id = $1`, 42); err != nil {
			return err
		}
		return pgqueue.Enqueue(ctx, tx, "refunds", refund)
	})
	if err != nil {
		log.Fatal(err)
	}

	// An effector, on any number of hosts.
	var effects *registry.Registry // bindings' Bound.Effector
	q, err := pgqueue.Open(ctx, pool, "refunds")
	if err != nil {
		log.Fatal(err)
	}
	store, err := pgstore.Open(ctx, pool)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	e, err := effector.New(effects, store, effector.WithDeadLetter(q.DeadLetter))
	if err != nil {
		log.Fatal(err)
	}
	src, err := q.NewSource()
	if err != nil {
		log.Fatal(err)
	}
	defer src.Close(context.WithoutCancel(ctx))
	if err := effector.Serve(ctx, src, q.Sink(), e, effector.WithWorkers(4)); err != nil {
		log.Print(err)
	}

	// The pipeline reads the result by the intent's id.
	res, ok, err := q.Result(context.Background(), refund.ID)
	if err != nil {
		log.Fatal(err)
	}
	if ok {
		log.Print(res.Status)
	}
}
