package jsonl_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/jsonl"
	"github.com/beam-agents/toolreg/intent"
)

// An effector serves an intents file that a producer appends to, into a
// results file. The checkpoint beside the intents file (intents.jsonl.ack)
// holds the byte offset and line number after the last line whose result is
// durable, so the second run starts at the producer's new line and sends
// only its email.
func ExampleOpenFile() {
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

	dir, err := os.MkdirTemp("", "jsonl-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	intents, results := filepath.Join(dir, "intents.jsonl"), filepath.Join(dir, "results.jsonl")
	produce := func(to string, seq int64) { // a producer appends one intent a line
		in := intent.Intent{
			ID: intent.IntentID([]byte(to), seq, 0), EntityKey: []byte(to), Seq: seq,
			ToolName: "send_email", ArgsJSON: []byte(`{"to":"` + to + `"}`),
			CreatedAtMs: 1700000000000, ExpiresAtMs: 1700003600000, Attempt: 1, Kind: intent.KindTool,
		}
		line, err := in.MarshalJSON()
		if err != nil {
			log.Fatal(err)
		}
		f, err := os.OpenFile(intents, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			log.Fatal(err)
		}
		defer f.Close()
		if _, err := f.Write(append(line, '\n')); err != nil {
			log.Fatal(err)
		}
	}
	serve := func() { // one run of the effector, to the end of the file
		src, err := jsonl.OpenFile(intents)
		if err != nil {
			log.Fatal(err)
		}
		defer src.Close()
		out, err := os.OpenFile(results, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			log.Fatal(err)
		}
		defer out.Close()
		err = effector.Serve(context.Background(), src, jsonl.NewSink(out), e,
			effector.WithServeLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			log.Fatal(err)
		}
		ck, err := os.ReadFile(intents + ".ack")
		if err != nil {
			log.Fatal(err)
		}
		var offset int64
		var line int
		if _, err := fmt.Sscanf(string(ck), "%d %d", &offset, &line); err != nil {
			log.Fatal(err)
		}
		fi, err := os.Stat(intents)
		if err != nil {
			log.Fatal(err)
		}
		res, err := os.ReadFile(results)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("sent %d; checkpoint after line %d (the end of the file: %t); %d result lines\n",
			sent, line, offset == fi.Size(), strings.Count(string(res), "\n"))
	}

	produce("ada@example.com", 1)
	produce("bob@example.com", 1)
	serve()
	produce("cy@example.com", 1)
	serve()
	// Output:
	// sent 2; checkpoint after line 2 (the end of the file: true); 2 result lines
	// sent 3; checkpoint after line 3 (the end of the file: true); 3 result lines
}
