package gateway

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Burn is a stored verification: what a replay of the signature answers.
type Burn struct {
	Signature string `json:"signature"`
	Workspace string `json:"workspace_id,omitempty"`
	Status    string `json:"status"` // credited, review, refused, rejected
	Reason    string `json:"reason,omitempty"`
	AmountRaw string `json:"amount_raw,omitempty"`
	Decimals  int    `json:"decimals,omitempty"`
	BlockTime int64  `json:"block_time,omitempty"`
	PriceE12  int64  `json:"price_usd_e12,omitempty"`
	Credit    int64  `json:"credit_micro_usd"`
}

func validSignature(s string) bool {
	if len(s) < 64 || len(s) > 90 {
		return false
	}
	for _, c := range s {
		if !(c >= '1' && c <= '9' || c >= 'A' && c <= 'Z' && c != 'I' && c != 'O' || c >= 'a' && c <= 'z' && c != 'l') {
			return false
		}
	}
	return true
}

func (g *Gateway) storedBurn(ctx context.Context, sig string) (*Burn, error) {
	var b Burn
	var ws sql.NullString
	err := g.db.sql.QueryRowContext(ctx, g.db.q(`SELECT signature, workspace_id, status, reason, amount_raw, decimals, block_time, price_e12, credit FROM burns WHERE signature = ?`), sig).
		Scan(&b.Signature, &ws, &b.Status, &b.Reason, &b.AmountRaw, &b.Decimals, &b.BlockTime, &b.PriceE12, &b.Credit)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("stored burn: %w", err)
	}
	b.Workspace = ws.String
	return &b, nil
}

// VerifyBurn verifies sig and credits it once. The signature is the
// burns table's primary key and the credit's ledger row is unique per
// burn, so concurrent replays insert one row between them; every other
// gets the stored record.
func (g *Gateway) VerifyBurn(ctx context.Context, sig string) (*Burn, error) {
	if g.opts.Burns.RPC == "" || g.opts.Burns.Mint == "" {
		return nil, ErrNotConfigured
	}
	if b, err := g.storedBurn(ctx, sig); err == nil {
		return b, nil
	} else if !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	b := &Burn{Signature: sig}
	tx, err := g.fetchTx(ctx, sig)
	var v *verified
	if err == nil {
		v, err = g.verifyTx(ctx, tx)
	}
	var ref *Refusal
	switch {
	case errors.As(err, &ref) && ref.Transient:
		return nil, err
	case errors.As(err, &ref):
		b.Status, b.Reason = "refused", ref.Reason
	case err != nil:
		return nil, err
	default:
		b.Workspace, b.AmountRaw, b.Decimals, b.BlockTime = v.Workspace, v.Amount.String(), v.Decimals, v.BlockTime
		price, ok, err := g.PriceAt(ctx, v.BlockTime)
		if err != nil {
			return nil, err
		}
		switch {
		case !ok && time.Since(time.Unix(v.BlockTime, 0)) < 2*time.Hour:
			return nil, &Refusal{Reason: "price_pending", Transient: true}
		case !ok:
			b.Status, b.Reason = "review", "price_unavailable"
		default:
			b.PriceE12, b.Credit = price, creditFor(v.Amount, v.Decimals, price)
			b.Status = "credited"
			if b.Credit < 0 || (g.opts.Burns.CapMicroUSD > 0 && b.Credit > g.opts.Burns.CapMicroUSD) {
				b.Status, b.Reason, b.Credit = "review", "over_cap", max(b.Credit, 0)
			}
		}
	}
	return g.storeBurn(ctx, b)
}

// storeBurn inserts b once and credits it in the same transaction; a
// losing replay reads the winner's row.
func (g *Gateway) storeBurn(ctx context.Context, b *Burn) (*Burn, error) {
	tx, err := g.db.sql.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("store burn: %w", err)
	}
	defer tx.Rollback()
	var ws any
	if b.Workspace != "" {
		ws = b.Workspace
	}
	if b.AmountRaw == "" {
		b.AmountRaw = "0"
	}
	n, err := g.db.exec(ctx, tx, `INSERT INTO burns (signature, workspace_id, status, reason, mint, amount_raw, decimals, block_time, price_e12, credit, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (signature) DO NOTHING`,
		b.Signature, ws, b.Status, b.Reason, g.opts.Burns.Mint, b.AmountRaw, b.Decimals, b.BlockTime, b.PriceE12, b.Credit, time.Now().Unix())
	if err != nil {
		return nil, fmt.Errorf("store burn: %w", err)
	}
	if n == 1 && b.Status == "credited" && b.Credit > 0 {
		if err := g.credit(ctx, tx, b.Workspace, b.Credit, "burn", b.Signature, ""); err != nil {
			return nil, err
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("store burn: %w", err)
	}
	return g.storedBurn(ctx, b.Signature)
}

// Review lists burns waiting for a person.
func (g *Gateway) Review(ctx context.Context) ([]Burn, error) {
	rows, err := g.db.sql.QueryContext(ctx, g.db.q(`SELECT signature FROM burns WHERE status = 'review' ORDER BY created_at`))
	if err != nil {
		return nil, fmt.Errorf("review: %w", err)
	}
	var sigs []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			rows.Close()
			return nil, fmt.Errorf("review: %w", err)
		}
		sigs = append(sigs, s)
	}
	rows.Close()
	out := []Burn{}
	for _, s := range sigs {
		b, err := g.storedBurn(ctx, s)
		if err != nil {
			return nil, err
		}
		out = append(out, *b)
	}
	return out, nil
}

// Decide settles a burn in review: approved credits amount (a person's
// figure, in micro-dollars) once; rejected credits nothing. Only a burn
// still in review moves.
func (g *Gateway) Decide(ctx context.Context, sig string, approve bool, amount int64) error {
	tx, err := g.db.sql.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("decide: %w", err)
	}
	defer tx.Rollback()
	status := "rejected"
	if approve {
		status = "credited"
	}
	n, err := g.db.exec(ctx, tx, `UPDATE burns SET status = ?, credit = ? WHERE signature = ? AND status = 'review' AND workspace_id IS NOT NULL`, status, max(amount, 0), sig)
	if err != nil {
		return fmt.Errorf("decide: %w", err)
	}
	if n != 1 {
		return fmt.Errorf("decide %s: no burn in review: %w", sig, ErrNotFound)
	}
	if approve {
		var ws string
		if err := tx.QueryRowContext(ctx, g.db.q(`SELECT workspace_id FROM burns WHERE signature = ?`), sig).Scan(&ws); err != nil {
			return fmt.Errorf("decide: %w", err)
		}
		if err := g.credit(ctx, tx, ws, amount, "burn", sig, "reviewed"); err != nil {
			return err
		}
	}
	return tx.Commit()
}

func (g *Gateway) postBurn(w http.ResponseWriter, r *http.Request) {
	key := workspaceOf(r)
	if key == "" {
		key = g.clientKey(r)
	}
	if !g.limits.allow("burn", key) {
		writeErr(w, http.StatusTooManyRequests, "rate_limited", "too many requests")
		return
	}
	if g.opts.Burns.RPC == "" || g.opts.Burns.Mint == "" {
		writeErr(w, http.StatusServiceUnavailable, "not_configured", "burn verification is not configured on this gateway")
		return
	}
	var req struct {
		Signature string `json:"signature"`
	}
	if json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&req) != nil || !validSignature(req.Signature) {
		writeErr(w, http.StatusBadRequest, "bad_signature", "the body is {\"signature\": a base58 transaction signature}")
		return
	}
	b, err := g.VerifyBurn(r.Context(), req.Signature)
	var ref *Refusal
	switch {
	case errors.As(err, &ref):
		writeErr(w, http.StatusAccepted, ref.Reason, "not verifiable yet; ask again later")
	case err != nil:
		g.internal(w, r, err)
	case b.Status == "refused":
		writeJSON(w, http.StatusUnprocessableEntity, b)
	default:
		writeJSON(w, http.StatusOK, b)
	}
}

// publicBurns is the public ledger: every burn's outcome, no workspace.
func (g *Gateway) publicBurns(w http.ResponseWriter, r *http.Request) {
	rows, err := g.db.sql.QueryContext(r.Context(), g.db.q(`SELECT signature, status, reason, amount_raw, decimals, block_time, price_e12, credit FROM burns ORDER BY created_at DESC, signature LIMIT 500`))
	if err != nil {
		g.internal(w, r, err)
		return
	}
	defer rows.Close()
	out := []Burn{}
	for rows.Next() {
		var b Burn
		if err := rows.Scan(&b.Signature, &b.Status, &b.Reason, &b.AmountRaw, &b.Decimals, &b.BlockTime, &b.PriceE12, &b.Credit); err != nil {
			g.internal(w, r, err)
			return
		}
		out = append(out, b)
	}
	writeJSON(w, http.StatusOK, map[string]any{"burns": out})
}
