package gateway

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Balance is a workspace's balance in micro-dollars.
func (g *Gateway) Balance(ctx context.Context, ws string) (int64, error) {
	var b int64
	err := g.db.sql.QueryRowContext(ctx, g.db.q(`SELECT balance FROM workspaces WHERE id = ?`), ws).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, ErrNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("balance: %w", err)
	}
	return b, nil
}

// credit adds amount to ws inside tx with its ledger row; the row's
// (kind, ref) is unique, so the same burn or grant can never credit twice.
func (g *Gateway) credit(ctx context.Context, tx *sql.Tx, ws string, amount int64, kind, ref, reason string) error {
	if amount < 0 {
		return fmt.Errorf("credit %s %s: negative amount", kind, ref)
	}
	if _, err := g.db.exec(ctx, tx, `INSERT INTO ledger (id, workspace_id, amount, kind, ref, reason, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		newID("le_"), ws, amount, kind, ref, reason, time.Now().Unix()); err != nil {
		return fmt.Errorf("credit %s: %w", kind, err)
	}
	n, err := g.db.exec(ctx, tx, `UPDATE workspaces SET balance = balance + ? WHERE id = ?`, amount, ws)
	if err != nil {
		return fmt.Errorf("credit %s: %w", kind, err)
	}
	if n != 1 {
		return fmt.Errorf("credit %s: workspace %w", kind, ErrNotFound)
	}
	return nil
}

// Grant credits ws with amount micro-dollars a person decided on, with
// the reason recorded in the ledger.
func (g *Gateway) Grant(ctx context.Context, ws string, amount int64, reason string) (string, error) {
	if amount <= 0 || reason == "" {
		return "", errors.New("grant: a positive amount and a reason")
	}
	ref := newID("gr_")
	tx, err := g.db.sql.BeginTx(ctx, nil)
	if err != nil {
		return "", fmt.Errorf("grant: %w", err)
	}
	defer tx.Rollback()
	if err := g.credit(ctx, tx, ws, amount, "grant", ref, reason); err != nil {
		return "", err
	}
	return ref, tx.Commit()
}

// Reserve takes amount from ws for one model call, until Settle or the
// sweeper returns what it did not use. The debit is one conditional
// UPDATE: two reservations racing for the last dollar cannot both pass.
// tag is the client's label for the call ("" for none), already checked
// by ValidTag.
func (g *Gateway) Reserve(ctx context.Context, ws, model, tag string, amount int64) (string, error) {
	id := newID("rs_")
	now := time.Now()
	tx, err := g.db.sql.BeginTx(ctx, nil)
	if err != nil {
		return "", fmt.Errorf("reserve: %w", err)
	}
	defer tx.Rollback()
	n, err := g.db.exec(ctx, tx, `UPDATE workspaces SET balance = balance - ? WHERE id = ? AND balance >= ?`, amount, ws, amount)
	if err != nil {
		return "", fmt.Errorf("reserve: %w", err)
	}
	if n != 1 {
		return "", ErrInsufficient
	}
	if _, err := g.db.exec(ctx, tx, `INSERT INTO reservations (id, workspace_id, amount, charged, state, model, tag, created_at, expires_at) VALUES (?, ?, ?, 0, 'open', ?, ?, ?, ?)`,
		id, ws, amount, model, tag, now.Unix(), now.Add(g.opts.ReservationTTL).Unix()); err != nil {
		return "", fmt.Errorf("reserve: %w", err)
	}
	return id, tx.Commit()
}

// Settle closes reservation id, charging cost (at most what was reserved)
// and returning the rest. Only the first close of a reservation — Settle
// or the sweeper — changes anything: the state moves from open in one
// conditional UPDATE. It reports whether this call closed it. in and out
// are the tokens the upstream reported, kept for the tag's total.
func (g *Gateway) Settle(ctx context.Context, id string, cost, in, out int64) (bool, error) {
	return g.close(ctx, id, cost, max(in, 0), max(out, 0), "settled", 0)
}

func (g *Gateway) close(ctx context.Context, id string, cost, in, out int64, state string, before int64) (bool, error) {
	cost = max(cost, 0)
	tx, err := g.db.sql.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("close reservation: %w", err)
	}
	defer tx.Rollback()
	cond := ""
	args := []any{state, cost, cost, in, out, time.Now().Unix(), id}
	if before > 0 {
		cond, args = " AND expires_at < ?", append(args, before)
	}
	n, err := g.db.exec(ctx, tx, `UPDATE reservations SET state = ?, charged = CASE WHEN amount < ? THEN amount ELSE ? END, tokens_in = ?, tokens_out = ?, closed_at = ? WHERE id = ? AND state = 'open'`+cond, args...)
	if err != nil {
		return false, fmt.Errorf("close reservation: %w", err)
	}
	if n != 1 {
		return false, nil
	}
	var ws string
	var amount, charged int64
	if err := tx.QueryRowContext(ctx, g.db.q(`SELECT workspace_id, amount, charged FROM reservations WHERE id = ?`), id).Scan(&ws, &amount, &charged); err != nil {
		return false, fmt.Errorf("close reservation: %w", err)
	}
	if _, err := g.db.exec(ctx, tx, `UPDATE workspaces SET balance = balance + ? WHERE id = ?`, amount-charged, ws); err != nil {
		return false, fmt.Errorf("close reservation: %w", err)
	}
	if charged > 0 {
		if _, err := g.db.exec(ctx, tx, `INSERT INTO ledger (id, workspace_id, amount, kind, ref, created_at) VALUES (?, ?, ?, 'usage', ?, ?)`,
			newID("le_"), ws, -charged, id, time.Now().Unix()); err != nil {
			return false, fmt.Errorf("close reservation: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("close reservation: %w", err)
	}
	return true, nil
}

// Sweep returns every reservation past its expiry in full: the request
// that made it died (a killed server, a lost client) without settling.
// Each is closed by the same conditional UPDATE as Settle, so a sweep
// racing a late Settle, or another server's sweep, returns it once.
func (g *Gateway) Sweep(ctx context.Context) (int, error) {
	now := time.Now().Unix()
	rows, err := g.db.sql.QueryContext(ctx, g.db.q(`SELECT id FROM reservations WHERE state = 'open' AND expires_at < ? LIMIT 1000`), now)
	if err != nil {
		return 0, fmt.Errorf("sweep: %w", err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, fmt.Errorf("sweep: %w", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	n := 0
	for _, id := range ids {
		ok, err := g.close(ctx, id, 0, 0, 0, "expired", now)
		if err != nil {
			return n, err
		}
		if ok {
			n++
		}
	}
	return n, nil
}

// UsageRow is one ledger entry as GET /v1/usage shows it.
type UsageRow struct {
	Kind   string `json:"kind"`
	Amount int64  `json:"amount_micro_usd"`
	Ref    string `json:"ref"`
	Reason string `json:"reason,omitempty"`
	At     int64  `json:"at"`
}

// Usage lists ws's latest ledger rows, newest first.
func (g *Gateway) Usage(ctx context.Context, ws string, limit int) ([]UsageRow, error) {
	rows, err := g.db.sql.QueryContext(ctx, g.db.q(`SELECT kind, amount, ref, reason, created_at FROM ledger WHERE workspace_id = ? ORDER BY created_at DESC, id LIMIT ?`), ws, limit)
	if err != nil {
		return nil, fmt.Errorf("usage: %w", err)
	}
	defer rows.Close()
	out := []UsageRow{}
	for rows.Next() {
		var r UsageRow
		if err := rows.Scan(&r.Kind, &r.Amount, &r.Ref, &r.Reason, &r.At); err != nil {
			return nil, fmt.Errorf("usage: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
