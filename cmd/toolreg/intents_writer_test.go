package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/sqlitestore"
)

// effWriter is the effwriter command (see TestMain): an effector's store
// writes in a process of its own while toolreg intents runs beside it.
//
//	effwriter PATH
//
// Eight workers claim and complete intents (results that expire at once, so
// purge has work) in a loop on the SQLite file PATH, as an effector at full
// speed does: its batches follow each other with the file's write lock free
// only for an instant between two. Its busy timeout is short: 2s, a fifth of
// the default, yet past what a loaded CI machine can deschedule a lock holder
// for (at 0.5s the test failed at load 16-20 on 2 cores). It
// creates the file "writing" after its first write, and stops once the file
// "stop" exists. It prints how many it wrote and exits 1 on the first error:
// a lock held too long by the inspecting process fails it.
func effWriter() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: effwriter PATH")
		os.Exit(2)
	}
	ctx := context.Background()
	s, err := sqlitestore.Open(ctx, os.Args[1], sqlitestore.WithBusyTimeout(2*time.Second), sqlitestore.WithSweepInterval(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "effwriter:", err)
		os.Exit(1)
	}
	defer s.Close()
	call := effector.NewCall("refund", []byte(`{}`))
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "effwriter:", err)
		os.Exit(1)
	}
	var n atomic.Int64
	var stop atomic.Bool
	var first sync.Once
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				id := fmt.Sprintf("live-%d-%06d", w, i)
				c, err := s.Claim(ctx, id, call, time.Minute)
				if err == nil {
					err = s.Complete(ctx, id, c.Token, []byte("r"), time.Millisecond)
				}
				if err != nil {
					fail(fmt.Errorf("after %d writes: %w", n.Load(), err))
				}
				n.Add(1)
				first.Do(func() {
					if err := os.WriteFile("writing", nil, 0o644); err != nil {
						fail(err)
					}
				})
			}
		})
	}
	for !stop.Load() {
		time.Sleep(5 * time.Millisecond)
		if _, err := os.Stat("stop"); err == nil {
			stop.Store(true)
		} else if !errors.Is(err, os.ErrNotExist) {
			fail(err)
		}
	}
	wg.Wait()
	fmt.Printf("effwriter: %d intents written, none failed\n", n.Load())
}

// waitFile is the waitfile command of the intents scripts: waitfile NAME
// waits until the file NAME exists in the script's directory.
func waitFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: waitfile NAME")
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(ts.MkAbs(args[0])); err == nil {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("%s did not appear within a minute", args[0])
		}
	}
}
