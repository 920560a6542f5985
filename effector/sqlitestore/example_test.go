package sqlitestore_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/sqlitestore"
)

// A claimed intent is in flight for every other worker until its owner
// completes it; from then on every claim returns the stored result.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "dedup")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	s, err := sqlitestore.Open(ctx, filepath.Join(dir, "dedup.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	// The call the intent asks for is recorded with its claim.
	call := effector.NewCall("send_email", []byte(`{"to":"a@example.com"}`))
	c, _ := s.Claim(ctx, "intent-1", call, time.Minute)
	fmt.Println("first claim:", c.State)
	again, _ := s.Claim(ctx, "intent-1", call, time.Minute)
	fmt.Println("second claim:", again.State)
	if err := s.Complete(ctx, "intent-1", c.Token, []byte(`{"status":"OK"}`), 24*time.Hour); err != nil {
		log.Fatal(err)
	}
	done, _ := s.Claim(ctx, "intent-1", call, time.Minute)
	fmt.Println("after complete:", done.State, string(done.Result))
	// Output:
	// first claim: claimed
	// second claim: in-flight
	// after complete: done {"status":"OK"}
}
