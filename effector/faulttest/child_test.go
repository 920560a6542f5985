package faulttest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/redisstore"
	"github.com/beam-agents/toolreg/effector/sqlitestore"
	"github.com/beam-agents/toolreg/registry"
)

// The kill points: where a child effector SIGKILLs itself.
const (
	killAfterClaim     = "after-claim"     // holds a fresh claim, nothing ran
	killInTool         = "in-tool"         // the downstream call was made, the tool has not returned
	killBeforeComplete = "before-complete" // the tool returned, the result is not recorded
	killAfterComplete  = "after-complete"  // recorded, not yet published nor acknowledged
)

// The child's configuration, passed in its environment.
const (
	envChild      = "FAULTTEST_CHILD" // "1" makes the test binary an effector process
	envStore      = "FT_STORE"        // "sqlite:<path>" or "redis:<host:port>"
	envIn         = "FT_IN"           // intents JSONL (checkpointed)
	envOut        = "FT_OUT"          // results JSONL (appended)
	envDownstream = "FT_DOWNSTREAM"   // base URL of the fake downstream service
	envKill       = "FT_KILL"         // a kill point, or empty
	envKillAt     = "FT_KILL_AT"      // die at this occurrence of the kill point
	envPause      = "FT_PAUSE"        // SIGSTOP self inside the tool for this intent id
	envWorkers    = "FT_WORKERS"
	envLease      = "FT_LEASE" // overrides childLease
)

// Lease and tool timeout of the children: short, so that a claim left by a
// killed child frees up quickly; the timeout stays below the lease, as
// effector.New demands.
const (
	childLease   = 400 * time.Millisecond
	childTimeout = 250 * time.Millisecond
)

// childMain runs the test binary as one effector process: Serve over a JSONL
// file with the configured store, a tool that calls the downstream service
// with the intent id as idempotency key, and the configured kill point.
func childMain() int {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if err := runChild(log); err != nil {
		log.Error("child failed", "error", err.Error())
		return 1
	}
	return 0
}

func runChild(log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()

	k := &killer{point: os.Getenv(envKill)}
	if v := os.Getenv(envKillAt); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return err
		}
		k.at = int64(n)
	}

	var store effector.DedupStore
	kind, where, _ := strings.Cut(os.Getenv(envStore), ":")
	switch kind {
	case "sqlite":
		s, err := sqlitestore.Open(ctx, where)
		if err != nil {
			return err
		}
		defer s.Close()
		store = s
	case "redis":
		rdb := redis.NewClient(&redis.Options{Addr: where, MaxRetries: -1})
		defer rdb.Close()
		store = redisstore.New(rdb)
	default:
		return fmt.Errorf("%s=%q: want sqlite:<path> or redis:<addr>", envStore, os.Getenv(envStore))
	}
	store = &killStore{DedupStore: store, k: k}

	table, err := childTable(os.Getenv(envDownstream), os.Getenv(envPause), k)
	if err != nil {
		return err
	}
	lease := childLease
	if v := os.Getenv(envLease); v != "" {
		if lease, err = time.ParseDuration(v); err != nil {
			return err
		}
	}
	e, err := effector.New(table, store, effector.WithLease(lease), effector.WithTimeout(childTimeout),
		effector.WithBackoff(5*time.Millisecond, 50*time.Millisecond), effector.WithLogger(log))
	if err != nil {
		return err
	}
	src, err := effector.OpenJSONLFile(os.Getenv(envIn))
	if err != nil {
		return err
	}
	defer src.Close()
	out, err := os.OpenFile(os.Getenv(envOut), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	workers := 1
	if v := os.Getenv(envWorkers); v != "" {
		if workers, err = strconv.Atoi(v); err != nil {
			return err
		}
	}
	return effector.Serve(ctx, src, effector.NewJSONLSink(out), e, effector.WithWorkers(workers),
		effector.WithRetryBackoff(10*time.Millisecond, 100*time.Millisecond), effector.WithServeLogger(log))
}

// killer SIGKILLs this process at the at-th occurrence of its point.
type killer struct {
	point string
	at    int64
	seen  atomic.Int64
}

func (k *killer) maybeDie(point string) {
	if point != k.point || k.seen.Add(1) != k.at {
		return
	}
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is on its way
}

// killStore puts the store-side kill points around a real store.
type killStore struct {
	effector.DedupStore
	k *killer
}

func (s *killStore) Claim(ctx context.Context, id string, lease time.Duration) (effector.Claim, error) {
	c, err := s.DedupStore.Claim(ctx, id, lease)
	if err == nil && c.State == effector.Claimed {
		s.k.maybeDie(killAfterClaim)
	}
	return c, err
}

func (s *killStore) Complete(ctx context.Context, id, token string, result []byte, ttl time.Duration) error {
	s.k.maybeDie(killBeforeComplete)
	err := s.DedupStore.Complete(ctx, id, token, result, ttl)
	if err == nil {
		s.k.maybeDie(killAfterComplete)
	}
	return err
}

type applyArgs struct {
	Key string `json:"key"`
}

type applied struct {
	Key string `json:"key"`
	PID int    `json:"pid"` // which process executed it
}

func childTable(downstream, pauseID string, k *killer) (*registry.Registry, error) {
	spec := &toolreg.Spec{
		Name: "apply", Description: "Apply an effect downstream.", SideEffect: true,
		Params: []*toolreg.Param{{Name: "key", Schema: toolreg.Schema{Type: toolreg.TypeString}}},
	}
	b := bindings.New([]*toolreg.Spec{spec})
	bindings.Effect(b, "apply", func(ctx context.Context, a applyArgs) (applied, error) {
		info, _ := effector.IntentFrom(ctx)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, downstream+"/apply", nil)
		if err != nil {
			return applied{}, err
		}
		req.Header.Set("Idempotency-Key", info.ID)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return applied{}, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if info.ID == pauseID {
			syscall.Kill(os.Getpid(), syscall.SIGSTOP) // a GC pause, a VM migration
		}
		k.maybeDie(killInTool)
		return applied{Key: a.Key, PID: os.Getpid()}, nil
	})
	bound, err := b.Bind()
	if err != nil {
		return nil, err
	}
	return bound.Effector, nil
}
