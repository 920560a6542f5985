package pgstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/internal/idrounds"
)

// The batch forms. A batch's items travel as arrays, one per column, that a
// statement unnests (as River's completer does): one statement, one round
// trip, one transaction for up to WithBatch's size items, whatever their
// number, instead of one statement each. The rows are taken in intent id
// order (the input is sorted, and completions and releases lock their rows
// with ORDER BY ... FOR UPDATE), as the group commit's batches take theirs,
// so no two of them wait on each other in a cycle.
//
// Items of one statement must have distinct ids (a row is changed once per
// statement), so a batch whose id repeats goes in rounds, one statement
// after another: the first occurrence of every id, then the second, and so
// on; each occurrence then finds what the one before left, as a second
// caller would.
//
// The store's limit: a statement carries at most WithBatch's size items
// (DefaultBatchSize) and, past its first item, at most maxStatementBytes of
// arrays. Since the items are arrays, Postgres's 65535 parameters of a
// statement never bound a batch; what does is a parameter's 1GB (an array
// of results) and the memory of a message. A larger batch is split into
// statements sent one after another, each its own transaction.
//
// A statement that Postgres refuses (an ERROR: a trigger, a constraint, a
// deadlock) rolls back alone and its items are then sent one by one, so a
// failure is its item's alone. A statement whose
// connection fails, or whose context ends, answers its items with that
// error: the store answers an item only once its statement has committed
// (its results are read through the commit), so an error may hide a write,
// never the reverse.

// batchMode runs every batch statement as the unnamed statement, which
// Postgres plans anew for the arrays and the table it has at that moment,
// with its parameters in binary (pgx.QueryExecModeCacheDescribe: the
// statement's parameter and column types are asked once per connection, and
// every run after is one round trip). It is not prepared under a name, as
// pgx's default is: after five runs Postgres may keep a generic plan for a
// prepared statement, and for a join over unnest, chosen while the table
// was small (a new deployment's), that plan reads the whole table for every
// batch, until an ANALYZE of the table, which autovacuum makes only after
// the table has grown by a tenth, and a minute or more later. Measured:
// BenchmarkServe, whose table grows 8,000 rows a run, fell from 25.8k to
// 8.5k intents/s over 8 runs that way, and held 21-23k/s unprepared.
// Planning each statement costs a fraction of a millisecond, shared by its
// batch. (The group commit's one-row statements find their row by its key
// in any plan, and stay prepared.)
//
// pgx.QueryExecModeExec, which this store used before, also plans each run
// but sends the parameters as text: every id, digest and result of a batch
// hex-encoded into an array literal that Postgres then parses. Measured
// (BenchmarkServe over a JSONL file, 16 workers, runs in turns): this
// process's processor time per intent fell from 31-35 to 25-29 µs, the
// server's from 40-45 to 38-40 µs, and intents/s rose 10-15%.
//
// A pool whose description cache is off (description_cache_capacity=0)
// cannot run CacheDescribe; there the store falls back to Exec.
func batchMode(pool *pgxpool.Pool) pgx.QueryExecMode {
	if pool.Config().ConnConfig.DescriptionCacheCapacity == 0 {
		return pgx.QueryExecModeExec
	}
	return pgx.QueryExecModeCacheDescribe
}

// maxStatementBytes bounds the bytes of arrays (mostly results) one batch
// statement carries, past its first item: a statement's parameter takes at
// most 1GB, and the client builds the whole message in memory.
const maxStatementBytes = 64 << 20

// batchClaimSQL claims each unnested item as claimSQL claims one, and
// answers each: the claim it took, or, for an item it did not take, the row
// as the statement's snapshot holds it (claimSQL's peekSQL, in the same
// round trip). The snapshot was taken before the insert waited on any row,
// so an item whose row it does not hold (inserted by a transaction that
// committed meanwhile), or holds free though the insert did not take it,
// answers with neither: it is claimed again.
const batchClaimSQL = `WITH x AS (
		SELECT * FROM unnest($1::bytea[], $2::text[], $3::bigint[], $4::bytea[], $5::bytea[])
			WITH ORDINALITY AS x(id, random, lease, digest, tool, ord)
	), c AS (
		INSERT INTO toolreg_effector_dedup AS d
			(intent_id, token, done, result, expires_at, call_digest, call_tool, attempts, reclaimed)
		SELECT id, random || ':' || nextval('toolreg_effector_fence'), false, NULL,
			clock_timestamp() + lease * interval '1 microsecond', digest, tool, 1, false
		FROM x ORDER BY ord
		ON CONFLICT (intent_id) DO UPDATE SET
			token = excluded.token, done = false, result = NULL, expires_at = excluded.expires_at,
			call_digest = excluded.call_digest, call_tool = excluded.call_tool,
			attempts = CASE WHEN d.done THEN 1 ELSE d.attempts + 1 END,
			reclaimed = NOT d.done AND d.token IS NOT NULL, waiters = false
		WHERE d.expires_at <= clock_timestamp() AND (d.done OR d.call_digest = excluded.call_digest)
		RETURNING intent_id, token, attempts, reclaimed
	)
	SELECT x.ord, c.token, c.attempts, c.reclaimed,
		p.done, p.expires_at > clock_timestamp(), p.call_digest = x.digest,
		CASE WHEN p.done AND p.call_digest = x.digest THEN p.result END, p.call_digest, p.call_tool
	FROM x LEFT JOIN c ON c.intent_id = x.id
	LEFT JOIN toolreg_effector_dedup p ON c.intent_id IS NULL AND p.intent_id = x.id`

// batchCompleteSQL completes each unnested item as completeSQL completes
// one, locking the rows it completes in id order, and returns the items it
// completed, notifying waiters.
const batchCompleteSQL = `WITH x AS (
		SELECT * FROM unnest($1::bytea[], $2::text[], $3::bytea[], $4::bigint[])
			WITH ORDINALITY AS x(id, token, result, ttl, ord)
	), l AS (
		SELECT d.intent_id, x.ord, x.result, x.ttl FROM toolreg_effector_dedup d JOIN x ON d.intent_id = x.id
		WHERE d.token = x.token AND NOT d.done AND d.expires_at > clock_timestamp()
		ORDER BY d.intent_id FOR UPDATE OF d
	), u AS (
		UPDATE toolreg_effector_dedup d
		SET token = NULL, done = true, result = l.result, expires_at = clock_timestamp() + l.ttl * interval '1 microsecond', reclaimed = false
		FROM l WHERE d.intent_id = l.intent_id
		RETURNING l.ord, d.intent_id, d.waiters
	)
	SELECT ord, ` + notifyExpr + ` FROM u`

// batchReleaseSQL releases each unnested item as releaseSQL releases one.
const batchReleaseSQL = `WITH x AS (
		SELECT * FROM unnest($1::bytea[], $2::text[]) WITH ORDINALITY AS x(id, token, ord)
	), l AS (
		SELECT d.intent_id, x.ord, d.attempts FROM toolreg_effector_dedup d JOIN x ON d.intent_id = x.id
		WHERE d.token = x.token AND NOT d.done AND d.expires_at > clock_timestamp()
		ORDER BY d.intent_id FOR UPDATE OF d
	), del AS (
		DELETE FROM toolreg_effector_dedup d USING l
		WHERE d.intent_id = l.intent_id AND l.attempts <= 1
		RETURNING l.ord, d.intent_id, d.waiters
	), upd AS (
		UPDATE toolreg_effector_dedup d SET token = NULL, expires_at = clock_timestamp(), attempts = d.attempts - 1, reclaimed = false
		FROM l WHERE d.intent_id = l.intent_id AND l.attempts > 1
		RETURNING l.ord, d.intent_id, d.waiters
	)
	SELECT ord, ` + notifyExpr + ` FROM (SELECT * FROM del UNION ALL SELECT * FROM upd) r`

// maxClaimRounds bounds how often an item is claimed again because its row
// changed under the statement, as Claim's loop does.
const maxClaimRounds = 100

// claimItem is one item of a ClaimBatch while it is being claimed.
type claimItem struct {
	id     []byte
	random string
	lease  int64 // µs
	call   effector.Call
}

// ClaimBatch implements effector.DedupStore.
func (s *Store) ClaimBatch(ctx context.Context, reqs []effector.ClaimRequest, out []effector.ClaimOutcome) {
	if err := s.autoSweep(ctx); err != nil {
		for i := range reqs {
			out[i] = effector.ClaimOutcome{Err: err}
		}
		return
	}
	items := make([]claimItem, len(reqs))
	var pending []int
	for i, r := range reqs {
		if r.Lease <= 0 {
			out[i] = effector.ClaimOutcome{Err: fmt.Errorf("pgstore: claiming intent %q for a lease of %v: want a positive duration", r.IntentID, r.Lease)}
			continue
		}
		random, err := s.newToken()
		if err != nil {
			out[i] = effector.ClaimOutcome{Err: err}
			continue
		}
		if !validToken(random) {
			out[i] = effector.ClaimOutcome{Err: fmt.Errorf("pgstore: claiming intent %q: the WithTokens function made %q, which Postgres text cannot hold: make tokens of valid UTF-8 without NUL", r.IntentID, random)}
			continue
		}
		items[i] = claimItem{id: []byte(r.IntentID), random: random, lease: micros(r.Lease), call: r.Call}
		pending = append(pending, i)
	}
	// Each round claims one occurrence of every id pending; claims whose
	// row changed under them are tried again, up to maxClaimRounds times.
	for retries := 0; retries < maxClaimRounds; {
		if len(pending) == 0 {
			return
		}
		round, later := idrounds.First(pending, func(i int) string { return string(items[i].id) })
		again := s.claimRound(ctx, items, round, out)
		if len(again) > 0 {
			retries++
		}
		// Claimed again before the later occurrences of their ids.
		pending = append(again, later...)
		slices.Sort(pending)
	}
	for _, i := range pending {
		out[i] = effector.ClaimOutcome{Err: fmt.Errorf("pgstore: claiming intent %q: its row changed under %d claims in a row; is something else writing to toolreg_effector_dedup?", reqs[i].IntentID, maxClaimRounds)}
	}
}

// claimRound claims the items at idx, whose ids are distinct, in
// statements of at most the store's limit, answers each in out, and returns
// those to claim again.
func (s *Store) claimRound(ctx context.Context, items []claimItem, idx []int, out []effector.ClaimOutcome) (again []int) {
	sortByID(idx, func(i int) []byte { return items[i].id })
	for _, part := range s.parts(idx, func(i int) int { return len(items[i].id) + len(items[i].call.Tool) + 64 }) {
		a, err := s.claimStatement(ctx, items, part, out)
		if len(part) > 1 && itemMayHaveFailed(ctx, err) {
			// The statement rolled back: each item on its own, so that
			// the failure is its item's alone.
			s.statementFailures.Add(1)
			for _, i := range part {
				a1, err := s.claimStatement(ctx, items, []int{i}, out)
				if err != nil {
					out[i] = effector.ClaimOutcome{Err: fmt.Errorf("pgstore: claiming intent %q: %w", items[i].id, err)}
				}
				again = append(again, a1...)
			}
			continue
		}
		if err != nil {
			for _, i := range part {
				out[i] = effector.ClaimOutcome{Err: fmt.Errorf("pgstore: claiming intent %q: %w", items[i].id, err)}
			}
			continue
		}
		again = append(again, a...)
	}
	return again
}

// claimStatement sends one batchClaimSQL for the items at part and, once it
// has committed, answers them in out; it returns those to claim again.
func (s *Store) claimStatement(ctx context.Context, items []claimItem, part []int, out []effector.ClaimOutcome) ([]int, error) {
	ids := make([][]byte, len(part))
	randoms := make([]string, len(part))
	leases := make([]int64, len(part))
	digests := make([][]byte, len(part))
	tools := make([][]byte, len(part))
	for k, i := range part {
		it := &items[i]
		ids[k], randoms[k], leases[k], digests[k], tools[k] = it.id, it.random, it.lease, it.call.Digest[:], []byte(it.call.Tool)
	}
	s.batchStatements.Add(1)
	s.batchItems.Add(int64(len(part)))
	rows, err := s.pool.Query(ctx, batchClaimSQL, s.batchMode, ids, randoms, leases, digests, tools)
	if err != nil {
		return nil, err
	}
	got := make([]effector.ClaimOutcome, len(part))
	answered := make([]bool, len(part))
	for rows.Next() {
		var (
			ord                  int64
			token                *string
			attempts             *int
			reclaimed            *bool
			done, live, matches  *bool
			result, digest, tool []byte
		)
		if err := rows.Scan(&ord, &token, &attempts, &reclaimed, &done, &live, &matches, &result, &digest, &tool); err != nil {
			rows.Close()
			return nil, err
		}
		k := int(ord - 1)
		if k < 0 || k >= len(part) {
			rows.Close()
			return nil, fmt.Errorf("the batch claim statement answered item %d of %d", ord, len(part))
		}
		switch {
		case token != nil:
			got[k].Claim = effector.Claim{State: effector.Claimed, Token: *token, Attempts: *attempts, Reclaimed: *reclaimed}
		case done == nil:
			continue // no row in the snapshot: claim again
		case !*matches && (*live || !*done):
			got[k].Claim = effector.Claim{State: effector.Mismatch, Recorded: effector.Call{Tool: string(tool)}}
			copy(got[k].Claim.Recorded.Digest[:], digest)
		case *live && *done:
			if result == nil {
				result = []byte{}
			}
			got[k].Claim = effector.Claim{State: effector.Done, Result: result}
		case *live:
			got[k].Claim = effector.Claim{State: effector.InFlight}
		default:
			continue // it ran out since the snapshot: claim again
		}
		answered[k] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var again []int
	for k, i := range part {
		if answered[k] {
			out[i] = got[k]
		} else {
			again = append(again, i)
		}
	}
	return again, nil
}

// CompleteBatch implements effector.DedupStore.
func (s *Store) CompleteBatch(ctx context.Context, reqs []effector.Completion, errs []error) {
	var pending []int
	for i, r := range reqs {
		switch {
		case r.TTL <= 0:
			errs[i] = fmt.Errorf("pgstore: completing intent %q with a result ttl of %v: want a positive duration", r.IntentID, r.TTL)
		case !validToken(r.Token):
			errs[i] = fmt.Errorf("pgstore: completing intent %q: %w", r.IntentID, effector.ErrNotOwner)
		default:
			pending = append(pending, i)
		}
	}
	s.changeBatch(ctx, pending, func(i int) []byte { return []byte(reqs[i].IntentID) },
		func(i int) int { return len(reqs[i].IntentID) + len(reqs[i].Token) + len(reqs[i].Result) + 16 },
		func(part []int) (string, []any) {
			ids := make([][]byte, len(part))
			tokens := make([]string, len(part))
			results := make([][]byte, len(part))
			ttls := make([]int64, len(part))
			for k, i := range part {
				r := &reqs[i]
				ids[k], tokens[k], results[k], ttls[k] = []byte(r.IntentID), r.Token, r.Result, micros(r.TTL)
				if results[k] == nil {
					results[k] = []byte{} // stored as an empty bytea, not NULL: a result was given
				}
			}
			return batchCompleteSQL, []any{ids, tokens, results, ttls}
		},
		func(i int, err error) {
			if err != nil {
				err = fmt.Errorf("pgstore: completing intent %q: %w", reqs[i].IntentID, err)
			}
			errs[i] = err
		})
}

// ReleaseBatch implements effector.DedupStore.
func (s *Store) ReleaseBatch(ctx context.Context, reqs []effector.Release, errs []error) {
	var pending []int
	for i, r := range reqs {
		if !validToken(r.Token) {
			errs[i] = fmt.Errorf("pgstore: releasing intent %q: %w", r.IntentID, effector.ErrNotOwner)
			continue
		}
		pending = append(pending, i)
	}
	s.changeBatch(ctx, pending, func(i int) []byte { return []byte(reqs[i].IntentID) },
		func(i int) int { return len(reqs[i].IntentID) + len(reqs[i].Token) + 16 },
		func(part []int) (string, []any) {
			ids := make([][]byte, len(part))
			tokens := make([]string, len(part))
			for k, i := range part {
				ids[k], tokens[k] = []byte(reqs[i].IntentID), reqs[i].Token
			}
			return batchReleaseSQL, []any{ids, tokens}
		},
		func(i int, err error) {
			if err != nil {
				err = fmt.Errorf("pgstore: releasing intent %q: %w", reqs[i].IntentID, err)
			}
			errs[i] = err
		})
}

// changeBatch sends the completions or releases at pending (indices into a
// batch, in its order) in rounds of distinct ids and statements within the
// store's limit: statement makes the statement of a part, whose rows name
// (by ordinality) the items it changed; answer gets each item's outcome:
// nil once changed and committed, ErrNotOwner if its statement committed
// without changing it, or the error of its statement.
func (s *Store) changeBatch(ctx context.Context, pending []int, id func(int) []byte, size func(int) int,
	statement func(part []int) (string, []any), answer func(i int, err error)) {
	for len(pending) > 0 {
		round, later := idrounds.First(pending, func(i int) string { return string(id(i)) })
		sortByID(round, id)
		for _, part := range s.parts(round, size) {
			err := s.changeStatement(ctx, part, statement, answer)
			if len(part) > 1 && itemMayHaveFailed(ctx, err) {
				s.statementFailures.Add(1)
				for _, i := range part {
					if err := s.changeStatement(ctx, []int{i}, statement, answer); err != nil {
						answer(i, err)
					}
				}
				continue
			}
			if err != nil {
				for _, i := range part {
					answer(i, err)
				}
			}
		}
		pending = later
	}
}

// changeStatement sends statement's SQL for part and, once it committed,
// answers every item of part.
func (s *Store) changeStatement(ctx context.Context, part []int, statement func(part []int) (string, []any), answer func(i int, err error)) error {
	query, args := statement(part)
	s.batchStatements.Add(1)
	s.batchItems.Add(int64(len(part)))
	rows, err := s.pool.Query(ctx, query, append([]any{s.batchMode}, args...)...)
	if err != nil {
		return err
	}
	changed := make([]bool, len(part))
	for rows.Next() {
		var ord int64
		if err := rows.Scan(&ord, nil); err != nil {
			rows.Close()
			return err
		}
		if ord < 1 || int(ord) > len(part) {
			rows.Close()
			return fmt.Errorf("the batch statement answered item %d of %d", ord, len(part))
		}
		changed[ord-1] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for k, i := range part {
		if changed[k] {
			answer(i, nil)
		} else {
			answer(i, effector.ErrNotOwner)
		}
	}
	return nil
}

// itemMayHaveFailed says whether err is Postgres refusing a batch
// statement (a trigger, a constraint, a deadlock) on a connection still
// open, which one item may have caused: then the statement rolled back, and
// its items are sent one by one. A connection that failed or was ended
// (FATAL), or a context that ended, fails every item alike.
func itemMayHaveFailed(ctx context.Context, err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Severity == "ERROR" && ctx.Err() == nil
}

// sortByID sorts idx by id, the order batches take rows in.
func sortByID(idx []int, id func(int) []byte) {
	slices.SortFunc(idx, func(a, b int) int { return bytes.Compare(id(a), id(b)) })
}

// parts splits idx into the statements the store's limit allows: at most
// its batch size items each, and past a statement's first item at most
// s.statementBytes of arrays, which size estimates per item.
func (s *Store) parts(idx []int, size func(int) int) [][]int {
	var out [][]int
	limit := s.statementBytes
	if limit <= 0 {
		limit = maxStatementBytes
	}
	for lo := 0; lo < len(idx); {
		hi, n := lo+1, size(idx[lo])
		for hi < len(idx) && hi-lo < int(s.batchSize) && n+size(idx[hi]) <= limit {
			n += size(idx[hi])
			hi++
		}
		out = append(out, idx[lo:hi])
		lo = hi
	}
	return out
}
