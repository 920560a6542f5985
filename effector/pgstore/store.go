package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/internal/groupcommit"
)

// Store is an effector.DedupStore in a Postgres database. It is safe for
// concurrent use, and any number of Stores in any number of processes may
// share one database.
type Store struct {
	pool          *pgxpool.Pool
	newToken      func() (string, error)
	sweepInterval time.Duration
	sweepBatch    int

	mu        sync.Mutex
	lastSweep time.Time

	listener listener // WaitInFlight's LISTEN connection

	lanes       []*lane           // claims and completions (group.go)
	batchSize   int32             // the most ops a lane's batch holds
	batchMode   pgx.QueryExecMode // how batch statements run (batch.go)
	unbatched   bool              // WithBatch(1): every op on its own, no group
	beforeBatch func()            // for tests: runs before a batch of two or more is sent

	statementBytes    int          // for tests: maxStatementBytes if 0 (batch.go)
	statementFailures atomic.Int64 // batch statements Postgres refused, whose items then went one by one
	// batchStatements and batchItems count the batch statements sent and
	// the items they carried, for benchmarks.
	batchStatements, batchItems atomic.Int64
}

var _ effector.DedupStore = (*Store)(nil)

// Option configures Open.
type Option func(*config)

type config struct {
	newToken      func() (string, error)
	sweepInterval time.Duration
	sweepBatch    int
	batchSize     int
	lanes         int
}

// WithTokens sets how claim tokens are made. Tokens must be unique across
// every process sharing the database. Default: 16 bytes from crypto/rand,
// hex encoded. Tests inject predictable tokens.
func WithTokens(newToken func() (string, error)) Option {
	return func(c *config) { c.newToken = newToken }
}

// WithSweepInterval sets how often a Claim first deletes a batch of expired
// rows (at most WithSweepBatch), so the table does not grow without bound.
// Zero or negative turns the automatic sweep off; call Sweep yourself then.
// Default: one minute.
func WithSweepInterval(d time.Duration) Option {
	return func(c *config) { c.sweepInterval = d }
}

// WithSweepBatch sets the most expired rows one sweep statement deletes,
// which bounds how long it holds their row locks. Default: 1000.
func WithSweepBatch(n int) Option {
	return func(c *config) { c.sweepBatch = n }
}

func randomToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("pgstore: making a claim token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// Open returns a store on the database pool connects to, which the caller
// owns and closes after the store's Close. The database must hold the store's tables
// at SchemaVersion: Open returns a *SchemaError saying what to run otherwise
// (Migrate creates or upgrades them).
func Open(ctx context.Context, pool *pgxpool.Pool, opts ...Option) (*Store, error) {
	cfg := config{newToken: randomToken, sweepInterval: time.Minute, sweepBatch: 1000, batchSize: DefaultBatchSize}
	for _, o := range opts {
		o(&cfg)
	}
	if pool == nil {
		return nil, errors.New("pgstore: Open with a nil pool: pass a *pgxpool.Pool from pgxpool.New")
	}
	if cfg.sweepBatch <= 0 {
		return nil, fmt.Errorf("pgstore: sweep batch %d: want a positive number of rows", cfg.sweepBatch)
	}
	if cfg.batchSize <= 0 {
		return nil, fmt.Errorf("pgstore: batch size %d: want a positive number of ops (1: no group commit)", cfg.batchSize)
	}
	if cfg.lanes < 0 {
		return nil, fmt.Errorf("pgstore: %d lanes: want a positive number of batches in flight (0: the pool's MaxConns)", cfg.lanes)
	}
	if cfg.lanes == 0 {
		cfg.lanes = max(1, int(pool.Config().MaxConns))
	}
	if err := CheckSchema(ctx, pool); err != nil {
		return nil, err
	}
	s := &Store{
		pool:          pool,
		newToken:      cfg.newToken,
		sweepInterval: cfg.sweepInterval,
		sweepBatch:    cfg.sweepBatch,
		lastSweep:     time.Now(),
		batchMode:     batchMode(pool),
	}
	s.unbatched = cfg.batchSize == 1
	s.batchSize = int32(min(cfg.batchSize, math.MaxInt32))
	for range cfg.lanes {
		s.lanes = append(s.lanes, &lane{group: groupcommit.New(cfg.batchSize, s.runBatch)})
	}
	return s, nil
}

func checkDuration(what string, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("pgstore: %s %v: want a positive duration", what, d)
	}
	return nil
}

// micros is d in whole microseconds, Postgres's resolution, rounded up so a
// lease is never shorter than asked.
func micros(d time.Duration) int64 { return int64((d + time.Microsecond - 1) / time.Microsecond) }

// claimSQL inserts a fresh claim, or takes over a row whose lease or result
// has run out (a result for any call; a claim only for the same call, since
// its owner may have run it). ON CONFLICT DO UPDATE locks the row and checks
// the WHERE on its latest version, so of concurrent claims exactly one wins.
// A live row, or a lapsed claim for another call, returns no row. Every
// instant is the server's clock.
const claimSQL = `INSERT INTO toolreg_effector_dedup AS d
	(intent_id, token, done, result, expires_at, call_digest, call_tool, attempts, reclaimed)
	VALUES ($1, $2 || ':' || nextval('toolreg_effector_fence'), false, NULL, clock_timestamp() + $3 * interval '1 microsecond', $4, $5, 1, false)
	ON CONFLICT (intent_id) DO UPDATE SET
		token = excluded.token, done = false, result = NULL, expires_at = excluded.expires_at,
		call_digest = excluded.call_digest, call_tool = excluded.call_tool,
		attempts = CASE WHEN d.done THEN 1 ELSE d.attempts + 1 END,
		reclaimed = NOT d.done AND d.token IS NOT NULL, waiters = false
	WHERE d.expires_at <= clock_timestamp() AND (d.done OR d.call_digest = excluded.call_digest)
	RETURNING token, attempts, reclaimed`

// peekSQL reads the row a claim did not take: whether it is live, whether
// its call matches, and the result only when it answers this call.
const peekSQL = `SELECT done, expires_at > clock_timestamp(), call_digest = $2,
	CASE WHEN done AND call_digest = $2 THEN result END, call_digest, call_tool
	FROM toolreg_effector_dedup WHERE intent_id = $1`

// Claim takes intentID for lease unless another owner's lease is live
// (InFlight) or a result is stored (Done, with its bytes), or the id is
// recorded for another call (Mismatch). Leases are measured by the
// database server's clock, never the caller's. A claim's token is the
// WithTokens value, a colon, and a fencing number from the sequence
// toolreg_effector_fence, which rises with every claim in the database: two
// claims never share a token, even if the random parts repeat.
func (s *Store) Claim(ctx context.Context, intentID string, call effector.Call, lease time.Duration) (effector.Claim, error) {
	if err := checkDuration("lease", lease); err != nil {
		return effector.Claim{}, err
	}
	if err := s.autoSweep(ctx); err != nil {
		return effector.Claim{}, err
	}
	random, err := s.newToken()
	if err != nil {
		return effector.Claim{}, err
	}
	if !validToken(random) {
		return effector.Claim{}, fmt.Errorf("pgstore: claiming intent %q: the WithTokens function made %q, which Postgres text cannot hold: make tokens of valid UTF-8 without NUL", intentID, random)
	}
	// A row changes between the two statements only by expiring or being
	// deleted (a Release, a sweep): then the claim is tried again.
	for range 100 {
		o, err := s.do(ctx, op{kind: claimOp, id: []byte(intentID), random: random, lease: micros(lease), digest: call.Digest[:], tool: []byte(call.Tool)})
		if err != nil {
			return effector.Claim{}, fmt.Errorf("pgstore: claiming intent %q: %w", intentID, err)
		}
		if o.claimed {
			return effector.Claim{State: effector.Claimed, Token: o.got, Attempts: o.attempts, Reclaimed: o.reclaimed}, nil
		}
		var done, live, matches bool
		var result, digest, tool []byte
		err = s.pool.QueryRow(ctx, peekSQL, []byte(intentID), call.Digest[:]).Scan(&done, &live, &matches, &result, &digest, &tool)
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return effector.Claim{}, fmt.Errorf("pgstore: claiming intent %q: %w", intentID, err)
		}
		switch {
		case !matches && (live || !done):
			c := effector.Claim{State: effector.Mismatch, Recorded: effector.Call{Tool: string(tool)}}
			copy(c.Recorded.Digest[:], digest)
			return c, nil
		case live && done:
			if result == nil {
				result = []byte{}
			}
			return effector.Claim{State: effector.Done, Result: result}, nil
		case live:
			return effector.Claim{State: effector.InFlight}, nil
		}
		// It ran out since the claim statement: claim again.
	}
	return effector.Claim{}, fmt.Errorf("pgstore: claiming intent %q: its row changed under 100 claims in a row; is something else writing to toolreg_effector_dedup?", intentID)
}

// Channel is the LISTEN/NOTIFY channel Complete and Release notify, with the
// intent id in hex as the payload (empty, which wakes every waiter, for an
// id too long for a payload), when a
// worker waits on the claim (WaitInFlight marks the row).
const Channel = "toolreg_effector_dedup"

// notifyOf is the select list that notifies Channel of each changed row that
// has waiters, and only those: a transaction that notifies takes a lock
// global to the database through its commit, which would serialize every
// Complete's commit (and its fsync) behind the others; measured, 4x fewer
// intents/s at 16 workers.
const notifyOf = `SELECT ` + notifyExpr

// notifyExpr is notifyOf's expression, for the batch statements, which
// select it beside each row's item.
const notifyExpr = `CASE WHEN waiters THEN pg_notify('` + Channel + `', CASE WHEN octet_length(intent_id) < 3500 THEN encode(intent_id, 'hex') ELSE '' END) END`

const completeSQL = `WITH u AS (UPDATE toolreg_effector_dedup
		SET token = NULL, done = true, result = $3, expires_at = clock_timestamp() + $4 * interval '1 microsecond', reclaimed = false
		WHERE intent_id = $1 AND token = $2 AND NOT done AND expires_at > clock_timestamp()
		RETURNING intent_id, waiters)
	` + notifyOf + ` FROM u`

// Complete stores result as intentID's terminal record for ttl if token
// still holds a live claim by the server's clock; otherwise it returns
// effector.ErrNotOwner. Waiters listening on Channel are notified.
func (s *Store) Complete(ctx context.Context, intentID, token string, result []byte, ttl time.Duration) error {
	if err := checkDuration("result ttl", ttl); err != nil {
		return err
	}
	if result == nil {
		result = []byte{} // stored as an empty bytea, not NULL: a result was given
	}
	if !validToken(token) {
		return fmt.Errorf("pgstore: completing intent %q: %w", intentID, effector.ErrNotOwner)
	}
	o, err := s.do(ctx, op{kind: completeOp, id: []byte(intentID), token: token, result: result, ttl: micros(ttl)})
	if err == nil && o.affected != 1 {
		err = effector.ErrNotOwner
	}
	if err != nil {
		return fmt.Errorf("pgstore: completing intent %q: %w", intentID, err)
	}
	return nil
}

// releaseSQL ends a live claim: the row goes, unless earlier owners'
// attempts are counted in it; then it stays, with no token and its lease
// ended, for the next claim to count on. The two conditions are disjoint, so
// the statement changes the row once.
const releaseSQL = `WITH d AS (DELETE FROM toolreg_effector_dedup
		WHERE intent_id = $1 AND token = $2 AND NOT done AND expires_at > clock_timestamp() AND attempts <= 1
		RETURNING intent_id, waiters),
	u AS (UPDATE toolreg_effector_dedup SET token = NULL, expires_at = clock_timestamp(), attempts = attempts - 1, reclaimed = false
		WHERE intent_id = $1 AND token = $2 AND NOT done AND expires_at > clock_timestamp() AND attempts > 1
		RETURNING intent_id, waiters)
	` + notifyOf + ` FROM (SELECT intent_id, waiters FROM d UNION ALL SELECT intent_id, waiters FROM u) r`

// Release ends token's live claim on intentID so that another worker may
// claim it at once; it returns effector.ErrNotOwner if token holds none.
// Waiters listening on Channel are notified.
func (s *Store) Release(ctx context.Context, intentID, token string) error {
	if !validToken(token) {
		return fmt.Errorf("pgstore: releasing intent %q: %w", intentID, effector.ErrNotOwner)
	}
	if err := expectOne(s.pool.Exec(ctx, releaseSQL, []byte(intentID), token)); err != nil {
		return fmt.Errorf("pgstore: releasing intent %q: %w", intentID, err)
	}
	return nil
}

// validToken says whether Postgres text can hold token: no token the store
// hands out is anything else, so a token that is not owns nothing.
func validToken(token string) bool {
	return utf8.ValidString(token) && !strings.ContainsRune(token, 0)
}

func expectOne(tag interface{ RowsAffected() int64 }, err error) error {
	if err != nil {
		return err
	}
	if tag.RowsAffected() != 1 {
		return effector.ErrNotOwner
	}
	return nil
}
