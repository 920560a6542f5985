package natsstream_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/natsstream"
	"github.com/beam-agents/toolreg/internal/effectortest"
)

// A producer publishes an intent (twice: the server drops the second), an
// effector serves the queue, and the producer reads the result by intent id.
func Example() {
	ctx := context.Background()
	nc, err := nats.Connect(cluster.URL()) // a three-node cluster, every write fsynced
	if err != nil {
		panic(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	q, err := natsstream.Open(ctx, js, "example")
	if err != nil {
		panic(err)
	}

	in := effectortest.Intent("customer-42", 1, 0)
	first, _ := q.Add(ctx, in)
	again, _ := q.Add(ctx, in) // a retry after a lost answer
	fmt.Println("stored:", first, "then", again)

	b := bindings.New([]*toolreg.Spec{{
		Name: "apply", Description: "Apply an effect once.", SideEffect: true,
		Params: []*toolreg.Param{{Name: "key", Schema: toolreg.Schema{Type: toolreg.TypeString}}},
	}})
	bindings.Effect(b, "apply", func(ctx context.Context, a struct {
		Key string `json:"key"`
	}) (map[string]string, error) {
		return map[string]string{"applied": a.Key}, nil
	})
	bound, err := b.Bind()
	if err != nil {
		panic(err)
	}
	e, _ := effector.New(bound.Effector, effector.NewMemoryStore(), effector.WithLogger(slog.New(slog.DiscardHandler)))
	src, _ := q.NewSource(ctx, natsstream.WithLogger(slog.New(slog.DiscardHandler)))
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() {
		done <- effector.Serve(sctx, src, q.Sink(), e, effector.WithServeLogger(slog.New(slog.DiscardHandler)))
	}()

	for {
		res, ok, err := q.Result(ctx, in.ID)
		if err != nil {
			panic(err)
		}
		if ok {
			fmt.Println(res.Status, string(res.Payload))
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	<-done
	src.Close(ctx)
	// Output:
	// stored: 1 then 0
	// OK {"applied":"customer-42"}
}
