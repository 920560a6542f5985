package main

import (
	"context"
	"errors"
	"fmt"
	"os"
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
// It claims and completes intents (results that expire at once, so purge
// has work) in a loop on the SQLite file PATH, with a short busy timeout,
// creates the file "writing" after its first write, and stops once the file
// "stop" exists. It prints how many it wrote and exits 1 on the first error:
// a lock held too long by the inspecting process fails it.
func effWriter() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: effwriter PATH")
		os.Exit(2)
	}
	ctx := context.Background()
	s, err := sqlitestore.Open(ctx, os.Args[1], sqlitestore.WithBusyTimeout(500*time.Millisecond), sqlitestore.WithSweepInterval(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "effwriter:", err)
		os.Exit(1)
	}
	defer s.Close()
	call := effector.NewCall("refund", []byte(`{}`))
	n := 0
	for {
		id := fmt.Sprintf("live-%06d", n)
		c, err := s.Claim(ctx, id, call, time.Minute)
		if err == nil {
			err = s.Complete(ctx, id, c.Token, []byte("r"), time.Millisecond)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "effwriter: after %d writes: %v\n", n, err)
			os.Exit(1)
		}
		if n++; n == 1 {
			if err := os.WriteFile("writing", nil, 0o644); err != nil {
				fmt.Fprintln(os.Stderr, "effwriter:", err)
				os.Exit(1)
			}
		}
		if _, err := os.Stat("stop"); err == nil {
			break
		} else if !errors.Is(err, os.ErrNotExist) {
			fmt.Fprintln(os.Stderr, "effwriter:", err)
			os.Exit(1)
		}
	}
	fmt.Printf("effwriter: %d intents written, none failed\n", n)
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
