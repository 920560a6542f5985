package effector_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/jsonl"
	"github.com/beam-agents/toolreg/intent"
)

// Serve answers a JSONL stream of intents with a JSONL stream of results: here
// the same intent twice, which runs once and is answered twice.
func ExampleServe() {
	spec := &toolreg.Spec{Name: "send_email", Description: "Send an email.", SideEffect: true,
		Params: []*toolreg.Param{{Name: "to", Schema: toolreg.Schema{Type: toolreg.TypeString}}}}
	b := bindings.New([]*toolreg.Spec{spec})
	sent := 0
	bindings.Effect(b, "send_email", func(ctx context.Context, a struct {
		To string `json:"to"`
	}) (string, error) {
		sent++
		return "sent to " + a.To, nil
	})
	bound, err := b.Bind()
	if err != nil {
		log.Fatal(err)
	}
	clock := func() time.Time { return time.UnixMilli(1700000000000) }
	e, err := effector.New(bound.Effector, effector.NewMemoryStore(), effector.WithClock(clock))
	if err != nil {
		log.Fatal(err)
	}

	in := intent.Intent{
		ID: intent.IntentID([]byte("user-1"), 1, 0), EntityKey: []byte("user-1"), Seq: 1,
		ToolName: "send_email", ArgsJSON: []byte(`{"to":"ada@example.com"}`),
		CreatedAtMs: 1700000000000, ExpiresAtMs: 1700003600000, Attempt: 1, Kind: intent.KindTool,
	}
	line, err := in.MarshalJSON()
	if err != nil {
		log.Fatal(err)
	}
	stream := strings.Repeat(string(line)+"\n", 2) // delivered twice

	err = effector.Serve(context.Background(),
		jsonl.NewSource(strings.NewReader(stream), "stdin"),
		jsonl.NewSink(os.Stdout), e,
		effector.WithServeLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("sent:", sent)
	// Output:
	// {"intent_id":"ec14275e-be6c-59a1-b081-c36a6408d260","entity_key":"dXNlci0x","seq":1,"status":"OK","payload":"InNlbnQgdG8gYWRhQGV4YW1wbGUuY29tIg==","completed_at_ms":1700000000000}
	// {"intent_id":"ec14275e-be6c-59a1-b081-c36a6408d260","entity_key":"dXNlci0x","seq":1,"status":"OK","payload":"InNlbnQgdG8gYWRhQGV4YW1wbGUuY29tIg==","completed_at_ms":1700000000000}
	// sent: 1
}
