package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// SchemaVersion is the version of the store's tables this package reads and
// writes. Migrate brings a database to it; Open refuses any other.
const SchemaVersion = 3

// migrations[i] takes the schema from version i to i+1. Append only: a
// released migration never changes, so every database at version n has the
// same tables.
var migrations = []string{
	// 1: the dedup table. A row is a claim (a token and a lease deadline) or
	// a terminal result (the bytes and an expiry), with the call it was
	// claimed for and its count of attempts.
	`CREATE TABLE toolreg_effector_dedup (
		intent_id   bytea PRIMARY KEY,    -- the id's bytes: text holds neither NUL nor invalid UTF-8
		token       text,                 -- the owner's token while claimed (random:fence); NULL once done or released
		done        boolean NOT NULL,     -- a terminal result is stored
		result      bytea,                -- the terminal result, exactly as completed
		expires_at  timestamptz NOT NULL, -- lease deadline if claimed, result expiry if done; the server's clock
		call_digest bytea NOT NULL,       -- effector.Call.Digest
		call_tool   bytea NOT NULL,       -- effector.Call.Tool
		attempts    integer NOT NULL,     -- claims not released (effector.Claim.Attempts)
		reclaimed   boolean NOT NULL,     -- the latest claim took over a lapsed one (effector.Claim.Reclaimed)
		waiters     boolean NOT NULL DEFAULT false -- a worker waits on this claim: Complete and Release notify
	);
	CREATE INDEX toolreg_effector_dedup_expires_at ON toolreg_effector_dedup (expires_at);
	CREATE SEQUENCE toolreg_effector_fence;`,
	// 2: the intent queue of effector/pgqueue: intents waiting or leased
	// (a token and the end of the lease in visible_at), their results, and
	// the dead letters.
	`CREATE TABLE toolreg_queue_intents (
		id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		queue       text NOT NULL,
		intent      bytea NOT NULL,                 -- intent.Intent wire bytes (AppendBinary), as enqueued
		enqueued_at timestamptz NOT NULL DEFAULT clock_timestamp(),
		visible_at  timestamptz NOT NULL DEFAULT clock_timestamp(), -- claimable from; a lease's end while claimed
		deliveries  integer NOT NULL DEFAULT 0,     -- claims so far (effector.Delivery.Deliveries)
		token       bigint                          -- the latest claim's fence; Ack deletes only with it
	);
	CREATE INDEX toolreg_queue_intents_queue_id ON toolreg_queue_intents (queue, id);
	CREATE SEQUENCE toolreg_queue_fence;
	CREATE TABLE toolreg_queue_results (
		queue        text NOT NULL,
		intent_id    bytea NOT NULL,
		status       smallint NOT NULL,             -- intent.Status
		result       bytea NOT NULL,                -- intent.Result wire bytes (AppendBinary)
		published_at timestamptz NOT NULL DEFAULT clock_timestamp(),
		PRIMARY KEY (queue, intent_id)
	);
	CREATE INDEX toolreg_queue_results_published_at ON toolreg_queue_results (published_at);
	CREATE TABLE toolreg_queue_dead (
		id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		queue       text NOT NULL,
		intent_id   bytea,                          -- NULL when the bytes are no intent
		intent      bytea NOT NULL,                 -- the bytes as enqueued (or as the effector had them)
		reason      text NOT NULL,
		deliveries  integer,                        -- NULL when unknown
		enqueued_at timestamptz,
		dead_at     timestamptz NOT NULL DEFAULT clock_timestamp()
	);
	CREATE INDEX toolreg_queue_dead_queue_id ON toolreg_queue_dead (queue, id);`,
	// 3: the budget uses (budget.go): one row per budget key and intent it
	// counts, until expires_at.
	`CREATE TABLE toolreg_effector_budget (
		budget_key   text NOT NULL,
		intent_id    bytea NOT NULL,
		expires_at   timestamptz NOT NULL, -- when the use stops counting; the server's clock
		budget_limit integer NOT NULL,     -- the limit it was counted under
		PRIMARY KEY (budget_key, intent_id)
	);
	CREATE INDEX toolreg_effector_budget_expires_at ON toolreg_effector_budget (expires_at);`,
}

// migrateLock is the key of the advisory lock Migrate holds, so that
// processes migrating one database at once take turns.
const migrateLock = 0x746f6f6c726567 // "toolreg"

// Migrate brings the store's tables in the database pool connects to up to
// SchemaVersion, creating them on a new database, in one transaction: a
// database is at one version or the next, never between. Several processes
// may call it at once. It refuses a database whose schema is newer than this
// package knows, which an older binary must not write to.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrateLock)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS toolreg_effector_schema (
			version     integer NOT NULL,
			migrated_at timestamptz NOT NULL DEFAULT now()
		)`); err != nil {
			return err
		}
		var have int
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM toolreg_effector_schema`).Scan(&have); err != nil {
			return err
		}
		if have > SchemaVersion {
			return &SchemaError{Have: have, Want: SchemaVersion}
		}
		for v := have; v < SchemaVersion; v++ {
			if _, err := tx.Exec(ctx, migrations[v]); err != nil {
				return fmt.Errorf("migrating to version %d: %w", v+1, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO toolreg_effector_schema (version) VALUES ($1)`, v+1); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		var se *SchemaError
		if errors.As(err, &se) {
			return err
		}
		return fmt.Errorf("pgstore: migrating the schema: %w", err)
	}
	return nil
}

// SchemaError says that the database's schema is not the version this
// package reads and writes, and what to do about it.
type SchemaError struct {
	Have int // the database's version; 0 when it has none of the tables
	Want int // SchemaVersion
}

func (e *SchemaError) Error() string {
	switch {
	case e.Have == 0:
		return fmt.Sprintf("pgstore: the database has no effector dedup tables (schema version %d expected); run pgstore.Migrate(ctx, pool), or toolreg migrate with the database's URL, once before Open", e.Want)
	case e.Have < e.Want:
		return fmt.Sprintf("pgstore: the database's schema is version %d, this toolreg needs version %d; run pgstore.Migrate(ctx, pool), or toolreg migrate with the database's URL, to upgrade it", e.Have, e.Want)
	default:
		return fmt.Sprintf("pgstore: the database's schema is version %d, newer than version %d which this toolreg knows; upgrade toolreg in every process that shares the database", e.Have, e.Want)
	}
}

// schemaVersion reads the database's schema version: 0 if it has none.
func schemaVersion(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	var v int
	err := pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM toolreg_effector_schema`).Scan(&v)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42P01" { // undefined_table
		return 0, nil
	}
	return v, err
}

// CheckSchema returns nil if the database pool connects to is at
// SchemaVersion, and a *SchemaError saying what to run otherwise. Open
// checks it; so does effector/pgqueue, whose tables the same migrations make.
func CheckSchema(ctx context.Context, pool *pgxpool.Pool) error {
	v, err := schemaVersion(ctx, pool)
	if err != nil {
		return fmt.Errorf("pgstore: reading the schema version: %w", err)
	}
	if v != SchemaVersion {
		return &SchemaError{Have: v, Want: SchemaVersion}
	}
	return nil
}
