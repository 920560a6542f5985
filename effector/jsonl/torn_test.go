package jsonl_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/jsonl"
	"github.com/beam-agents/toolreg/internal/effectortest"
)

func receiveAck(t *testing.T, src *jsonl.Source) effector.Delivery {
	t.Helper()
	d, err := src.Receive(context.Background())
	if err != nil {
		t.Fatalf("Receive: %v", err)
	}
	if d.Ack != nil {
		if err := d.Ack(context.Background()); err != nil {
			t.Fatalf("Ack: %v", err)
		}
	}
	return d
}

func TestATornLastLineIsNeitherReadNorCheckpointedPastAndIsReadWholeAfterARestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "intents.jsonl")
	a, b, c := effectortest.Intent("torn", 1, 0), effectortest.Intent("torn", 1, 1), effectortest.Intent("torn", 1, 2)
	whole := effectortest.Line(t, a) + effectortest.Line(t, b)
	last := effectortest.Line(t, c)
	cut := len(last) / 2
	effectortest.WriteFile(t, path, whole+last[:cut]) // the writer crashed mid-line

	src, err := jsonl.OpenFile(path, jsonl.WithTornLineWait(0))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{a.ID, b.ID} {
		if d := receiveAck(t, src); d.Intent == nil || d.Intent.ID != want {
			t.Fatalf("delivery = %+v, want intent %s", d, want)
		}
	}
	d, err := src.Receive(context.Background())
	var te *jsonl.TornLineError
	if !errors.As(err, &te) {
		t.Fatalf("Receive at the torn line = %+v, %v; want a *TornLineError, and no delivery", d, err)
	}
	if te.Line != 3 || te.Offset != int64(len(whole)) || te.Len != cut || !strings.Contains(err.Error(), path+":3") {
		t.Fatalf("torn line error = %+v (%v), want line 3 at byte %d, %d bytes, naming %s:3", te, err, len(whole), cut, path)
	}
	src.Close()
	ck, err := os.ReadFile(path + ".ack")
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Fields(string(ck))[0]; want != strconv.Itoa(len(whole)) {
		t.Fatalf("checkpoint = %q, want it at byte %d, the torn line's start", ck, len(whole))
	}

	// The writer finishes the line; the restarted source reads it whole.
	f := effectortest.AppendFile(t, path)
	if _, err := f.WriteString(last[cut:]); err != nil {
		t.Fatal(err)
	}
	f.Close()
	again, err := jsonl.OpenFile(path, jsonl.WithTornLineWait(0))
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if d := receiveAck(t, again); d.Intent == nil || d.Intent.ID != c.ID {
		t.Fatalf("delivery after the line was finished = %+v, want intent %s", d, c.ID)
	}
	if _, err := again.Receive(context.Background()); !errors.Is(err, io.EOF) {
		t.Fatalf("Receive after the last line: %v, want io.EOF", err)
	}
}

func TestAFileSourceWaitsForTheRestOfATornLine(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "intents.jsonl")
	c := effectortest.Intent("wait", 1, 0)
	last := effectortest.Line(t, c)
	effectortest.WriteFile(t, path, last[:10])
	src, err := jsonl.OpenFile(path, jsonl.WithTornLineWait(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	go func() {
		time.Sleep(100 * time.Millisecond)
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Error(err)
			return
		}
		f.WriteString(last[10:])
		f.Close()
	}()
	if d := receiveAck(t, src); d.Intent == nil || d.Intent.ID != c.ID {
		t.Fatalf("delivery = %+v, want the intent whose line was finished while the source waited", d)
	}
}

func TestATornLastLineAtTheEndOfAStreamIsDeadLetteredWithItsBytesAndOffset(t *testing.T) {
	t.Parallel()
	a := effectortest.Intent("stream", 1, 0)
	first := effectortest.Line(t, a)
	src := jsonl.NewSource(strings.NewReader(first+`{"intent_id":"half`), "stdin")
	if d := receiveAck(t, src); d.Intent == nil {
		t.Fatalf("first delivery = %+v, want an intent", d)
	}
	d := receiveAck(t, src)
	var te *jsonl.TornLineError
	if d.Intent != nil || !errors.As(d.Err, &te) || string(d.Bytes) != `{"intent_id":"half` || d.Offset != int64(len(first)) {
		t.Fatalf("delivery of the fragment = %+v, want a *TornLineError with its bytes at offset %d", d, len(first))
	}
}

func TestALineThatDoesNotDecodeGoesToTheDeadLetterSinkWithItsBytesAndOffset(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "intents.jsonl")
	a, b := effectortest.Intent("dead", 1, 0), effectortest.Intent("dead", 1, 1)
	garbage := `{"intent_id": 12, oops}`
	effectortest.WriteFile(t, path, effectortest.Line(t, a)+garbage+"\n"+effectortest.Line(t, b))
	src, err := jsonl.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	e, calls := effectortest.Effector(t, effector.NewMemoryStore())
	var mu sync.Mutex
	var dead []effector.Delivery
	sink := jsonl.NewSink(io.Discard)
	err = effector.Serve(context.Background(), src, sink, e, effector.WithServeLogger(slog.New(slog.DiscardHandler)),
		effector.WithEntryDeadLetter(func(ctx context.Context, d effector.Delivery) error {
			mu.Lock()
			defer mu.Unlock()
			dead = append(dead, d)
			return nil
		}))
	if err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if len(dead) != 1 || string(dead[0].Bytes) != garbage || dead[0].Offset != int64(len(effectortest.Line(t, a))) || dead[0].Err == nil || !strings.Contains(dead[0].Pos, ":2") {
		t.Fatalf("dead letters = %+v, want line 2's bytes %q at offset %d with its error", dead, garbage, len(effectortest.Line(t, a)))
	}
	if calls.Total() != 2 {
		t.Fatalf("executions = %d, want 2: the good lines around it run", calls.Total())
	}
}
