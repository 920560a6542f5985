package natsstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/beam-agents/toolreg/effector/natsstore"
)

// A server running without JetStream is refused, once Open's context
// ends (it waits out a cluster electing its leader, which gives the same
// silence), with an error saying to turn JetStream on.
func TestOpenOnAServerWithoutJetStream(t *testing.T) {
	t.Parallel()
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("the server did not start")
	}
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err = natsstore.Open(ctx, js, "toolreg")
	if err == nil || !strings.Contains(err.Error(), "run nats-server with JetStream on (-js") {
		t.Fatalf("Open on a server without JetStream: %v; want a refusal saying to run nats-server with -js", err)
	}
}
