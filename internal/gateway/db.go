package gateway

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
	_ "modernc.org/sqlite"             // registers "sqlite"
)

// DB is the gateway's store: SQLite (embedded, one file, WAL) or
// PostgreSQL. Queries are written once with ? placeholders and rebound
// for PostgreSQL, so both run the same SQL and the same tests.
type DB struct {
	sql *sql.DB
	pg  bool
}

// IsPostgres reports whether dsn names a PostgreSQL database.
func IsPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// Open opens (and migrates) the database dsn names: a postgres:// URL, or
// a SQLite file path.
func Open(ctx context.Context, dsn string) (*DB, error) {
	d := &DB{pg: IsPostgres(dsn)}
	var err error
	if d.pg {
		d.sql, err = sql.Open("pgx", dsn)
		if err == nil {
			d.sql.SetMaxOpenConns(32)
		}
	} else {
		// One connection: SQLite has one writer anyway, and a single
		// connection never meets SQLITE_BUSY under load. busy_timeout
		// covers a second process (a `grant` while serve runs).
		q := url.Values{}
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "busy_timeout(10000)")
		q.Add("_pragma", "foreign_keys(1)")
		q.Add("_pragma", "synchronous(FULL)")
		q.Set("_txlock", "immediate")
		d.sql, err = sql.Open("sqlite", "file:"+dsn+"?"+q.Encode())
		if err == nil {
			d.sql.SetMaxOpenConns(1)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := d.sql.PingContext(pctx); err != nil {
		d.sql.Close()
		return nil, fmt.Errorf("open database: %w", err)
	}
	if err := d.migrate(ctx); err != nil {
		d.sql.Close()
		return nil, err
	}
	return d, nil
}

// Close closes the database.
func (d *DB) Close() error { return d.sql.Close() }

// q rebinds ? placeholders to PostgreSQL's $n. No query of the gateway
// has a literal ? in it.
func (d *DB) q(s string) string {
	if !d.pg {
		return s
	}
	var b strings.Builder
	n := 0
	for _, r := range s {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func (d *DB) exec(ctx context.Context, tx *sql.Tx, query string, args ...any) (int64, error) {
	var res sql.Result
	var err error
	if tx != nil {
		res, err = tx.ExecContext(ctx, d.q(query), args...)
	} else {
		res, err = d.sql.ExecContext(ctx, d.q(query), args...)
	}
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// migrations are applied in order, each once, each in its own
// transaction. Money is BIGINT micro-dollars; the CHECK constraints are
// the last line of defence behind the conditional UPDATEs.
var migrations = []string{
	`CREATE TABLE workspaces (
		id TEXT PRIMARY KEY,
		created_at BIGINT NOT NULL,
		balance BIGINT NOT NULL DEFAULT 0 CHECK (balance >= 0)
	);
	CREATE TABLE api_keys (
		digest TEXT PRIMARY KEY,
		key_version INTEGER NOT NULL,
		workspace_id TEXT NOT NULL REFERENCES workspaces(id),
		created_at BIGINT NOT NULL
	);
	CREATE TABLE ledger (
		id TEXT PRIMARY KEY,
		workspace_id TEXT NOT NULL REFERENCES workspaces(id),
		amount BIGINT NOT NULL,
		kind TEXT NOT NULL CHECK (kind IN ('burn','grant','usage')),
		ref TEXT NOT NULL,
		reason TEXT NOT NULL DEFAULT '',
		created_at BIGINT NOT NULL,
		UNIQUE (kind, ref)
	);
	CREATE TABLE reservations (
		id TEXT PRIMARY KEY,
		workspace_id TEXT NOT NULL REFERENCES workspaces(id),
		amount BIGINT NOT NULL CHECK (amount >= 0),
		charged BIGINT NOT NULL DEFAULT 0 CHECK (charged >= 0 AND charged <= amount),
		state TEXT NOT NULL CHECK (state IN ('open','settled','expired')),
		model TEXT NOT NULL,
		created_at BIGINT NOT NULL,
		expires_at BIGINT NOT NULL,
		closed_at BIGINT
	);
	CREATE INDEX reservations_open ON reservations (state, expires_at);
	CREATE TABLE burns (
		signature TEXT PRIMARY KEY,
		workspace_id TEXT,
		status TEXT NOT NULL CHECK (status IN ('credited','review','refused','rejected')),
		reason TEXT NOT NULL DEFAULT '',
		mint TEXT NOT NULL DEFAULT '',
		amount_raw TEXT NOT NULL DEFAULT '0',
		decimals INTEGER NOT NULL DEFAULT 0,
		block_time BIGINT NOT NULL DEFAULT 0,
		price_e12 BIGINT NOT NULL DEFAULT 0,
		credit BIGINT NOT NULL DEFAULT 0 CHECK (credit >= 0),
		created_at BIGINT NOT NULL
	);
	CREATE TABLE price_samples (
		source TEXT NOT NULL,
		at BIGINT NOT NULL,
		price_e12 BIGINT NOT NULL CHECK (price_e12 > 0),
		PRIMARY KEY (source, at)
	);
	CREATE INDEX price_samples_at ON price_samples (at);`,
	// 2: a reservation carries the client's tag (a label the workspace
	// chose for its own calls, e.g. a run and fork) and the tokens it
	// settled, so GET /v1/usage?tag= can sum one run's charges.
	`ALTER TABLE reservations ADD COLUMN tag TEXT NOT NULL DEFAULT '';
	ALTER TABLE reservations ADD COLUMN tokens_in BIGINT NOT NULL DEFAULT 0;
	ALTER TABLE reservations ADD COLUMN tokens_out BIGINT NOT NULL DEFAULT 0;
	CREATE INDEX reservations_tag ON reservations (workspace_id, tag);`,
}

func (d *DB) migrate(ctx context.Context) error {
	// Several servers may start at once on one PostgreSQL: an advisory
	// lock makes the migration one at a time.
	conn, err := d.sql.Conn(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer conn.Close()
	if d.pg {
		if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock(7261)`); err != nil {
			return fmt.Errorf("migrate: lock: %w", err)
		}
		defer conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(7261)`)
	}
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY)`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	var have int
	if err := conn.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&have); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	for v := have + 1; v <= len(migrations); v++ {
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("migrate %d: %w", v, err)
		}
		for _, stmt := range strings.Split(migrations[v-1], ";") {
			if strings.TrimSpace(stmt) == "" {
				continue
			}
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				tx.Rollback()
				return fmt.Errorf("migrate %d: %w", v, err)
			}
		}
		if _, err := tx.ExecContext(ctx, d.q(`INSERT INTO schema_version (version) VALUES (?)`), v); err != nil {
			tx.Rollback()
			return fmt.Errorf("migrate %d: %w", v, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("migrate %d: %w", v, err)
		}
	}
	return nil
}
