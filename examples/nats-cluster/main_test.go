package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestMain makes the test binary an effector process when run starts it as
// one, as the example's binary is.
func TestMain(m *testing.M) {
	if name := os.Getenv(roleEnv); name != "" {
		if err := effectorMain(name, os.Stdout); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestTheExampleAnswersEveryIntentOnce runs the example as `go run` does:
// three servers, three effector processes, the stream's leader node stopped
// and an effector killed midway. run fails if an intent is lost, has no
// result, ran twice without a result saying its effect is unknown, or has
// no done record in the dedup bucket (the effectors' only shared state
// besides the queue); the output says so for people.
func TestTheExampleAnswersEveryIntentOnce(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(context.Background(), &syncWriter{w: &out}, exe); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	got := out.String()
	t.Log(got)
	for _, want := range []string{
		"published 60 intents; published them again: 0 stored",
		"--- stopping node n",
		"60 intents, 60 results: every intent answered once",
		`dedup bucket "refunds-dedup": 60 of 60 intents have their result recorded`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the output lacks %q", want)
		}
	}
	if !regexp.MustCompile(`--- killed effector-\d \(SIGKILL\) with a tool running`).MatchString(got) {
		t.Errorf("the output names no effector killed with a tool running")
	}
	for _, name := range []string{"effector-1", "effector-2", "effector-3"} {
		if !regexp.MustCompile(name + ` ran refund order-\d+`).MatchString(got) {
			t.Errorf("%s ran nothing", name)
		}
	}
}
