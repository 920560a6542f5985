package jsonl

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// An ack whose checkpoint cannot be saved fails, and so does its retry until
// the checkpoint is on disk: Serve retries a failed ack, and a retry that
// succeeded without saving would leave an acknowledged line to be delivered
// again after a restart.
func TestACheckpointAckIsRetriedUntilSaved(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	intents := filepath.Join(dir, "intents.jsonl")
	if err := os.WriteFile(intents, []byte("{\"intent_id\":\"a\"}\n{\"intent_id\":\"b\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(dir, "intents.jsonl.ack")
	src, err := OpenFile(intents, WithCheckpointFile(ck))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	d, err := src.Receive(context.Background())
	if err != nil || d.Ack == nil {
		t.Fatalf("Receive = %+v, %v; want a delivery to acknowledge", d, err)
	}

	// A directory where save writes its temporary file makes the save fail.
	blocker := ck + ".tmp"
	if err := os.Mkdir(blocker, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := d.Ack(context.Background()); err == nil {
		t.Fatal("Ack succeeded though the checkpoint could not be saved")
	}
	if err := d.Ack(context.Background()); err == nil {
		t.Fatal("the retried Ack succeeded though the checkpoint still could not be saved")
	}
	if _, err := os.Stat(ck); !os.IsNotExist(err) {
		t.Fatalf("checkpoint file after failed saves: %v, want none", err)
	}

	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	if err := d.Ack(context.Background()); err != nil {
		t.Fatalf("the retried Ack once the checkpoint can be saved: %v", err)
	}
	got, err := os.ReadFile(ck)
	if err != nil {
		t.Fatal(err)
	}
	if want := "18 1\n"; string(got) != want {
		t.Fatalf("checkpoint = %q, want %q: the end of the acknowledged first line", got, want)
	}
}
