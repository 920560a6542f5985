package sqlitestore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net/url"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite" // also registers the "sqlite" database/sql driver
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/internal/groupcommit"
)

// Store is an effector.DedupStore kept in one SQLite file. It is safe for
// concurrent use, and several Stores (in one process or several) may share
// one file.
type Store struct {
	db            *sql.DB // the one connection that writes
	busyTimeout   time.Duration
	rdb           *sql.DB // connections that only read: in WAL mode they wait for no writer
	wstmts        *stmts  // db's prepared statements
	rstmts        *stmts  // rdb's
	now           func() time.Time
	newToken      func() (string, error)
	sweepInterval time.Duration
	sweepBatch    int

	mu        sync.Mutex
	lastSweep time.Time
	// budgetSweep is where the last sweep of budget uses stopped (its last
	// key and intent id); only a batch's leader reads or writes it.
	budgetSweep [2]string

	group *groupcommit.Group[writeOp]
}

var _ effector.DedupStore = (*Store)(nil)

// Option configures Open.
type Option func(*config)

type config struct {
	busyTimeout   time.Duration
	now           func() time.Time
	newToken      func() (string, error)
	sweepInterval time.Duration
	sweepBatch    int
	batchSize     int
	batchDelay    time.Duration
}

// WithBusyTimeout sets how long a write waits for another connection or
// process holding the file's write lock before failing with SQLITE_BUSY.
// Default: 10s.
func WithBusyTimeout(d time.Duration) Option {
	return func(c *config) { c.busyTimeout = d }
}

// WithClock sets the clock that lease deadlines and result expiries are
// measured against. Every process sharing a file must use the same clock.
// Default: time.Now. Tests inject a fake clock to expire leases without sleeping.
func WithClock(now func() time.Time) Option {
	return func(c *config) { c.now = now }
}

// WithTokens sets how claim tokens are made. Tokens must be unique across
// every process sharing the file. Default: 16 bytes from crypto/rand, hex
// encoded. Tests inject predictable tokens.
func WithTokens(newToken func() (string, error)) Option {
	return func(c *config) { c.newToken = newToken }
}

// WithSweepInterval sets how often Claim also deletes expired rows (at most
// WithSweepBatch of them per sweep), so a file does not grow without bound.
// Zero or negative turns the automatic sweep off; call Sweep yourself then.
// Default: one minute.
func WithSweepInterval(d time.Duration) Option {
	return func(c *config) { c.sweepInterval = d }
}

// WithSweepBatch sets the most expired rows one automatic sweep deletes, which
// bounds how long it holds the write lock. Default: 1000.
func WithSweepBatch(n int) Option {
	return func(c *config) { c.sweepBatch = n }
}

// randomToken returns 16 random bytes, hex encoded.
func randomToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("sqlitestore: making a claim token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

const schema = `CREATE TABLE IF NOT EXISTS effector_dedup (
	intent_id  TEXT PRIMARY KEY NOT NULL,
	token      TEXT,             -- the owner's token while claimed; NULL once done
	done       INTEGER NOT NULL, -- 0: claimed, 1: terminal result stored
	result     BLOB,             -- the terminal result, exactly as completed
	expires_at INTEGER NOT NULL, -- unix ns: lease deadline if claimed, result expiry if done
	call       BLOB,             -- the call: its 32-byte digest, then its tool name; NULL in rows of older versions
	attempts   INTEGER NOT NULL DEFAULT 1 -- claims not released (effector.Claim.Attempts)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS effector_dedup_expires_at ON effector_dedup (expires_at);`

// addedColumns are the columns later versions added, for files an older
// version made: ALTER TABLE adds each one missing.
var addedColumns = []struct{ name, def string }{
	{"call", "BLOB"},
	{"attempts", "INTEGER NOT NULL DEFAULT 1"},
}

// Open opens (creating it if needed) the SQLite file at path and the store's
// table in it. The caller must Close the store.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	cfg := config{
		busyTimeout:   10 * time.Second,
		now:           time.Now,
		newToken:      randomToken,
		sweepInterval: time.Minute,
		sweepBatch:    1000,
		batchSize:     DefaultBatchSize,
		batchDelay:    DefaultBatchDelay,
	}
	for _, o := range opts {
		o(&cfg)
	}
	if path == "" || strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("sqlitestore: path %q: want a file path without '?' or '#'", path)
	}
	if cfg.batchSize <= 0 || cfg.batchDelay < 0 {
		return nil, fmt.Errorf("sqlitestore: batch of %d ops, delay %v: want a positive size and a delay of zero or more", cfg.batchSize, cfg.batchDelay)
	}
	if cfg.sweepBatch <= 0 {
		return nil, fmt.Errorf("sqlitestore: sweep batch %d: want a positive number of rows", cfg.sweepBatch)
	}
	db, err := sql.Open("sqlite", dsn(path, min(cfg.busyTimeout, writeLockTry)))
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: opening %s: %w", path, err)
	}
	// Every statement of this store writes, and SQLite admits one writer at a
	// time, so a second connection in this process would only queue on the
	// file lock (polling, slower) instead of on the pool (a channel).
	db.SetMaxOpenConns(1)
	if err := initSchema(ctx, db, cfg.busyTimeout); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlitestore: preparing %s: %w", path, err)
	}
	// Reads outside a batch (a mismatch's recorded call) take connections of
	// their own, so they need not wait for a batch's commit.
	rdb, err := sql.Open("sqlite", dsn(path, cfg.busyTimeout))
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlitestore: opening %s: %w", path, err)
	}
	rdb.SetMaxOpenConns(readConns)
	rdb.SetMaxIdleConns(readConns)
	ws := &stmts{db: db}
	for _, q := range append([]string{claimFresh, claimRead, claimWrite, completeWrite, savepoint, rollbackTo, release}, budgetQueries...) {
		if err := ws.prepare(ctx, q); err != nil {
			ws.close()
			rdb.Close()
			db.Close()
			return nil, fmt.Errorf("sqlitestore: preparing %s: %w", path, err)
		}
	}
	s := &Store{
		db:            db,
		busyTimeout:   cfg.busyTimeout,
		rdb:           rdb,
		wstmts:        ws,
		rstmts:        &stmts{db: rdb},
		now:           cfg.now,
		newToken:      cfg.newToken,
		sweepInterval: cfg.sweepInterval,
		sweepBatch:    cfg.sweepBatch,
		lastSweep:     cfg.now(),
	}
	s.group = groupcommit.NewStream(cfg.batchSize, s.commitBatch).WithLinger(cfg.batchDelay)
	return s, nil
}

// The hot path's write statements, prepared when the store opens: the one
// write connection is a batch's while it runs, so none can be prepared then.
const (
	claimRead = `SELECT done, result, expires_at,
		(call IS NULL OR substr(call, 1, 32) = ?2) + 2 * (token IS NOT NULL) + 4 * attempts
		FROM effector_dedup WHERE intent_id = ?1`
	claimFresh = `INSERT INTO effector_dedup (intent_id, token, done, result, expires_at, call, attempts)
		VALUES (?1, ?2, 0, NULL, ?3, ?4, 1) ON CONFLICT (intent_id) DO NOTHING`
	claimWrite = `INSERT OR REPLACE INTO effector_dedup (intent_id, token, done, result, expires_at, call, attempts)
		VALUES (?1, ?2, 0, NULL, ?3, ?4, ?5)`
	completeWrite = `UPDATE effector_dedup
		SET token = NULL, done = 1, result = ?3, expires_at = ?4
		WHERE intent_id = ?1 AND token = ?2 AND done = 0 AND expires_at > ?5`
)

// readConns is how many connections of a Store read at once.
const readConns = 4

// dsn is the modernc.org/sqlite data source name: the pragmas are per
// connection, so they go in the DSN, which the driver applies to each new one.
// _txlock=immediate makes every BEGIN a BEGIN IMMEDIATE: the write lock is taken
// before the first read, so a claim's read-then-write cannot interleave with
// another process's.
func dsn(path string, busy time.Duration) string {
	q := url.Values{}
	q.Set("_txlock", "immediate")
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	return "file:" + path + "?" + q.Encode()
}

func initSchema(ctx context.Context, db *sql.DB, busyTimeout time.Duration) error {
	tx, err := beginWrite(ctx, db, busyTimeout)
	if err != nil {
		return explainBusy(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, schema+budgetSchema); err != nil {
		return err
	}
	have := map[string]bool{}
	rows, err := tx.QueryContext(ctx, `SELECT name FROM pragma_table_info('effector_dedup')`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return err
		}
		have[name] = true
	}
	if err := rows.Close(); err != nil {
		return err
	}
	for _, c := range addedColumns {
		if !have[c.name] {
			if _, err := tx.ExecContext(ctx, `ALTER TABLE effector_dedup ADD COLUMN `+c.name+` `+c.def); err != nil {
				return fmt.Errorf("adding column %s: %w", c.name, err)
			}
		}
	}
	return tx.Commit()
}

// Close closes the store's connection to the file.
func (s *Store) Close() error {
	return errors.Join(s.rstmts.close(), s.wstmts.close(), s.rdb.Close(), s.db.Close())
}

func checkDuration(what string, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("sqlitestore: %s %v: want a positive duration", what, d)
	}
	return nil
}

// Claim takes intentID for lease unless another owner's lease is live
// (InFlight) or a result is stored (Done, with its bytes), or the id is
// recorded for another call (Mismatch). A row an older version wrote has no
// digest, and matches any call.
func (s *Store) Claim(ctx context.Context, intentID string, call effector.Call, lease time.Duration) (effector.Claim, error) {
	return s.claim(ctx, intentID, call, lease, nil)
}

// claim is Claim; b, if not nil, counts the intent against its budgets in
// the claim's op (budget.go): b.before runs first, and b.after once the
// claim's outcome is known.
func (s *Store) claim(ctx context.Context, intentID string, call effector.Call, lease time.Duration, b *budgetOp) (effector.Claim, error) {
	if err := checkDuration("lease", lease); err != nil {
		return effector.Claim{}, err
	}
	// Every claim is one op of the batch's transaction, which answers all
	// cases under the write lock. (Claims used to look first with a plain
	// read, to answer a redelivered intent without the lock; but most claims
	// are of fresh ids, and that read cost a fifth of the CPU of each: the
	// commit invalidates a reader's page cache, so each read went to the
	// file. An op that only reads dirties no page, so a redelivery costs the
	// batch a statement or two and no write.)
	token, err := s.newToken()
	if err != nil {
		return effector.Claim{}, err
	}
	if b != nil {
		b.token = token
	}
	it := claimItem{id: intentID, call: call, lease: lease, token: token, budget: b}
	err = s.write(ctx, false, it.run(s))
	if err == nil && it.recorded {
		it.claim, err = s.mismatch(ctx, intentID)
	}
	if err != nil {
		return effector.Claim{}, fmt.Errorf("sqlitestore: claiming intent %q: %w", intentID, err)
	}
	return it.claim, nil
}

// claimItem is one claim: what it asks for, and what it found once its op
// has run in a batch's transaction.
type claimItem struct {
	id    string
	call  effector.Call
	lease time.Duration
	token string

	// budget, if not nil, counts the intent against its budgets in the
	// claim's op (budget.go): before the claim's statements, and after them
	// once their outcome is known.
	budget *budgetOp

	claim    effector.Claim
	recorded bool // the id is known for another call: read it after the commit
}

// run returns the claim's op: it answers every case under the write lock.
// The claim writes at most one statement, so a failure undoes only itself;
// see budgetOp for a claim that counts.
func (it *claimItem) run(s *Store) func(ctx context.Context, tx *sql.Tx, now int64) error {
	if it.budget == nil {
		return it.claimIn(s)
	}
	claimIn := it.claimIn(s)
	return func(ctx context.Context, tx *sql.Tx, now int64) error {
		if err := it.budget.before(ctx, tx, now); err != nil {
			return err
		}
		if err := claimIn(ctx, tx, now); err != nil {
			return err
		}
		return it.budget.after(ctx, tx, now, it.claim.State == effector.Claimed)
	}
}

// claimIn returns the claim's statements.
func (it *claimItem) claimIn(s *Store) func(ctx context.Context, tx *sql.Tx, now int64) error {
	return func(ctx context.Context, tx *sql.Tx, now int64) error {
		// Most claims are of an id never seen: one statement takes those.
		if err := expectOne(s.exec(ctx, tx, claimFresh, it.id, it.token, now+int64(it.lease), callBlob(it.call))); err == nil {
			it.claim = effector.Claim{State: effector.Claimed, Token: it.token, Attempts: 1}
			return nil
		} else if !errors.Is(err, effector.ErrNotOwner) {
			return err
		}
		// The id has a row. Under the write lock it cannot change between
		// this read and the write below. The flags pack three facts in one
		// column (every column costs the driver allocations on the hot path):
		// bit 0, the row's call matches (or it has none: an older version's
		// row); bit 1, a token is set (claimed, live or lapsed; not
		// released); the rest, the attempts.
		var done bool
		var result []byte
		var expiresAt, flags int64
		err := s.queryRow(ctx, tx, claimRead, it.id, it.call.Digest[:]).Scan(&done, &result, &expiresAt, &flags)
		exists := err == nil
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		live := exists && expiresAt > now
		if exists && (live || !done) && flags&1 == 0 {
			it.recorded = true
			return nil
		}
		if live {
			it.claim = liveClaim(done, result)
			return nil
		}
		// Missing, or expired: an expired claim's owner is presumed dead (and
		// may have run the tool: Reclaimed), an expired result has lived its
		// ttl, a released row keeps only the attempts of earlier owners.
		attempts := int64(1)
		if exists && !done {
			attempts = flags>>2 + 1
		}
		if _, err := s.exec(ctx, tx, claimWrite, it.id, it.token, now+int64(it.lease), callBlob(it.call), attempts); err != nil {
			return err
		}
		it.claim = effector.Claim{State: effector.Claimed, Token: it.token, Reclaimed: exists && !done && flags&2 != 0, Attempts: int(attempts)}
		return nil
	}
}

// callBlob is the call column's value: the digest, then the tool name.
func callBlob(c effector.Call) []byte {
	b := make([]byte, 0, len(c.Digest)+len(c.Tool))
	return append(append(b, c.Digest[:]...), c.Tool...)
}

// mismatch reads the call intentID is recorded for, for a claim by another
// call. It runs on the rare path only, so the hot path scans no call.
func (s *Store) mismatch(ctx context.Context, intentID string) (effector.Claim, error) {
	var blob []byte
	row, err := s.read(ctx, `SELECT call FROM effector_dedup WHERE intent_id = ?1`, intentID)
	if err != nil {
		return effector.Claim{}, err
	}
	if err := row.Scan(&blob); err != nil {
		return effector.Claim{}, err
	}
	var c effector.Call
	if len(blob) >= len(c.Digest) {
		copy(c.Digest[:], blob)
		c.Tool = string(blob[len(c.Digest):])
	}
	return effector.Claim{State: effector.Mismatch, Recorded: c}, nil
}

// liveClaim is what a claim finds in a live row: a result (Done) or another
// owner's claim (InFlight).
func liveClaim(done bool, result []byte) effector.Claim {
	if !done {
		return effector.Claim{State: effector.InFlight}
	}
	if result == nil {
		result = []byte{} // a result was given, though empty
	}
	return effector.Claim{State: effector.Done, Result: result}
}

// Complete stores result as intentID's terminal record for ttl if token still
// holds a live claim; otherwise it returns effector.ErrNotOwner.
func (s *Store) Complete(ctx context.Context, intentID, token string, result []byte, ttl time.Duration) error {
	if err := checkDuration("result ttl", ttl); err != nil {
		return err
	}
	if result == nil {
		result = []byte{} // stored as an empty BLOB, not NULL: a result was given
	}
	if err := s.write(ctx, false, s.completeOp(intentID, token, result, ttl)); err != nil {
		return fmt.Errorf("sqlitestore: completing intent %q: %w", intentID, err)
	}
	return nil
}

// completeOp is a completion's op: one statement, fenced by the token and
// the lease. result must not be nil.
func (s *Store) completeOp(intentID, token string, result []byte, ttl time.Duration) func(ctx context.Context, tx *sql.Tx, now int64) error {
	return func(ctx context.Context, tx *sql.Tx, now int64) error {
		return expectOne(s.exec(ctx, tx, completeWrite, intentID, token, result, now+int64(ttl), now))
	}
}

// Release ends token's live claim on intentID so that another worker may
// claim it at once; it returns effector.ErrNotOwner if token holds none. The
// row goes, unless earlier owners' attempts are counted in it: it then stays,
// with no token and its lease ended, for the next claim to count on.
func (s *Store) Release(ctx context.Context, intentID, token string) error {
	if err := s.write(ctx, true, s.releaseOp(intentID, token)); err != nil {
		return fmt.Errorf("sqlitestore: releasing intent %q: %w", intentID, err)
	}
	return nil
}

// releaseOp is a release's op: two statements, so it runs in a savepoint
// (multi).
func (s *Store) releaseOp(intentID, token string) func(ctx context.Context, tx *sql.Tx, now int64) error {
	return func(ctx context.Context, tx *sql.Tx, now int64) error {
		if err := expectOne(s.exec(ctx, tx, `UPDATE effector_dedup SET token = NULL, expires_at = ?3, attempts = attempts - 1
			WHERE intent_id = ?1 AND token = ?2 AND done = 0 AND expires_at > ?3`,
			intentID, token, now)); err != nil {
			return err
		}
		_, err := s.exec(ctx, tx, `DELETE FROM effector_dedup WHERE intent_id = ?1 AND done = 0 AND attempts <= 0`, intentID)
		return err
	}
}

func expectOne(res sql.Result, err error) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n != 1 {
		return effector.ErrNotOwner
	}
	return nil
}

// attemptMemory is how long a sweep keeps a claim whose lease ran out with
// neither Complete nor Release: its owner crashed or stalled and may have run
// the tool, and the row is how the next claim learns it is Reclaimed. It is
// the Redis store's default attempt memory; keep intents' lives shorter.
const attemptMemory = 24 * time.Hour

// sweepable selects the rows a sweep deletes: results past their ttl, and
// lapsed claims older than attemptMemory. ?1 is now, ?2 now - attemptMemory.
const sweepable = `expires_at <= ?1 AND (done = 1 OR expires_at <= ?2)`

// Sweep deletes every expired result and every claim whose lease ran out
// more than 24 hours ago (until then, a lapsed claim tells the next claim it
// is Reclaimed), and returns how many rows it deleted.
func (s *Store) Sweep(ctx context.Context) (int64, error) {
	var n int64
	err := s.write(ctx, false, func(ctx context.Context, tx *sql.Tx, now int64) error {
		res, err := s.exec(ctx, tx, `DELETE FROM effector_dedup WHERE `+sweepable, now, now-int64(attemptMemory))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sqlitestore: sweeping expired rows: %w", err)
	}
	return n, nil
}

func (s *Store) sweepDue(now time.Time) bool {
	if s.sweepInterval <= 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.Sub(s.lastSweep) < s.sweepInterval {
		return false
	}
	s.lastSweep = now
	return true
}

// writeLockTry is the longest the write connection waits for the file's
// write lock in one try (its SQLite busy timeout); beginWrite tries again
// until the store's busy timeout.
const writeLockTry = time.Millisecond

// beginWrite begins a transaction on db, the write connection (BEGIN
// IMMEDIATE: it takes the file's write lock), waiting for the lock up to
// timeout. SQLite's own busy handler, once it has waited 300 ms, tries the
// lock only every 100 ms, and an effector in another process writing batch
// after batch frees it only for an instant between two of them: such a
// waiter almost never finds it free, and a `toolreg intents purge` beside a
// busy effector failed so. So each try waits in SQLite at most writeLockTry,
// and beginWrite tries again after a short random pause, about a thousand
// times a second.
func beginWrite(ctx context.Context, db *sql.DB, timeout time.Duration) (*sql.Tx, error) {
	deadline := time.Now().Add(timeout)
	for {
		tx, err := db.BeginTx(ctx, nil)
		if err == nil || !isBusy(err) || ctx.Err() != nil || !time.Now().Before(deadline) {
			return tx, err
		}
		time.Sleep(mrand.N(250 * time.Microsecond))
	}
}

// isBusy says whether err is SQLITE_BUSY: the file is locked.
func isBusy(err error) bool {
	var serr *sqlite.Error
	return errors.As(err, &serr) && serr.Code()&0xff == sqlite3.SQLITE_BUSY
}

// explainBusy says what to do about SQLITE_BUSY, which alone says only that
// the file is locked.
func explainBusy(err error) error {
	if isBusy(err) {
		return fmt.Errorf("%w: another connection held the file's write lock longer than the busy timeout; raise WithBusyTimeout, or let fewer processes write to the file", err)
	}
	return err
}
