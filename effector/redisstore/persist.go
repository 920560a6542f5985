package redisstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// WithUnpersistedServer makes Open accept a server that does not persist
// writes (no append-only file, no snapshots), or whose settings it cannot
// read (CONFIG disabled), logging a warning: a restart of that server forgets
// every claim and result, and every intent it held runs again. Use it only
// for tests and throwaway setups. Default: Open refuses such a server.
func WithUnpersistedServer() Option {
	return func(s *Store) { s.unpersistedOK = true }
}

// WithLogger sets where Open's warnings go. Default: slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(s *Store) { s.logger = l }
}

// PersistenceError is Open's refusal of a Redis server that does not persist
// writes, or whose settings it could not read (Err).
type PersistenceError struct {
	Addr       string // the server, as the client names it
	AppendOnly string // its appendonly setting, "" if unread
	Save       string // its save setting, "" if unread or none
	Err        error  // why the settings could not be read, if they could not
}

func (e *PersistenceError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("redisstore: cannot tell whether redis %s persists writes (CONFIG GET failed: %v): a server that does not persist forgets every claim and result on a restart, and each intent runs again; allow CONFIG GET for this client, or pass WithUnpersistedServer to accept the risk", e.Addr, e.Err)
	}
	return fmt.Sprintf("redisstore: redis %s does not persist writes (appendonly %s, save %q): a restart forgets every claim and result, and each intent runs again; set appendonly yes (with appendfsync always for no loss at all) in its config, or pass WithUnpersistedServer to accept the risk", e.Addr, e.AppendOnly, e.Save)
}

func (e *PersistenceError) Unwrap() error { return e.Err }

// Open returns a store using rdb, as New does, once it has checked that the
// server persists writes (CONFIG GET appendonly and save; on a cluster, every
// master). A server with appendonly yes passes. One that only takes RDB
// snapshots passes with a warning: a crash loses the writes since the last
// snapshot, and their intents run again. One with neither, or whose settings
// cannot be read, is refused with a *PersistenceError, unless
// WithUnpersistedServer accepts it with a warning. Prefer Open to New, which
// checks nothing.
func Open(ctx context.Context, rdb redis.UniversalClient, opts ...Option) (*Store, error) {
	s := New(rdb, opts...)
	if s.err != nil {
		return nil, s.err
	}
	if s.logger == nil {
		s.logger = slog.Default()
	}
	check := func(ctx context.Context, c *redis.Client) error { return s.checkPersistence(ctx, c) }
	var err error
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, check)
	} else if c, ok := rdb.(*redis.Client); ok {
		err = check(ctx, c)
	} else {
		err = &PersistenceError{Addr: "(unknown)", Err: errors.New("the client is neither a *redis.Client nor a *redis.ClusterClient")}
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

var warnMu sync.Mutex // keeps ForEachMaster's concurrent warnings whole

func (s *Store) checkPersistence(ctx context.Context, c *redis.Client) error {
	addr := c.Options().Addr
	cfg, err := c.ConfigGet(ctx, "appendonly").Result()
	var save map[string]string
	if err == nil {
		save, err = c.ConfigGet(ctx, "save").Result()
	}
	if err != nil {
		if !s.unpersistedOK {
			return &PersistenceError{Addr: addr, Err: err}
		}
		s.warn(ctx, "redisstore: cannot tell whether the redis server persists writes; accepted by WithUnpersistedServer: a restart may forget every claim and result, and run each intent again", "addr", addr, "error", err.Error())
		return nil
	}
	aof, rdb := strings.ToLower(cfg["appendonly"]), strings.TrimSpace(save["save"])
	switch {
	case aof == "yes":
		return nil
	case rdb != "":
		s.warn(ctx, "redisstore: the redis server persists writes only in RDB snapshots: a crash loses the claims and results written since the last snapshot, and their intents run again; set appendonly yes", "addr", addr, "save", rdb)
		return nil
	case s.unpersistedOK:
		s.warn(ctx, "redisstore: the redis server does not persist writes; accepted by WithUnpersistedServer: a restart forgets every claim and result, and runs each intent again", "addr", addr)
		return nil
	}
	return &PersistenceError{Addr: addr, AppendOnly: aof, Save: rdb}
}

func (s *Store) warn(ctx context.Context, msg string, args ...any) {
	warnMu.Lock()
	defer warnMu.Unlock()
	s.logger.WarnContext(ctx, msg, args...)
}
