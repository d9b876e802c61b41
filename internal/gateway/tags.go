package gateway

import (
	"context"
	"fmt"
	"net/http"
)

// TagHeader is the request header a client labels a model call with (the
// hosted engine sends "<run>/<fork>"). A tag only groups a workspace's
// own reservations for GET /v1/usage?tag=: it never selects whose money
// is spent (the key does) and is never shown to another workspace, so a
// client lying in it only mislabels its own rows.
const TagHeader = "X-Forkbomb-Tag"

// maxTag bounds a tag: a label, not a place to store data.
const maxTag = 64

// ValidTag reports whether t is a tag the gateway stores: 1 to 64 of
// A-Z a-z 0-9 . _ - / — nothing a log line, a SQL LIKE or a terminal
// could read as anything but text.
func ValidTag(t string) bool {
	if t == "" || len(t) > maxTag {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-', c == '/':
		default:
			return false
		}
	}
	return true
}

// tagOf is the request's tag: "" when it sent none, and ok false when
// what it sent is not a valid tag (refused, never cleaned up: a mangled
// tag would silently merge two labels).
func tagOf(r *http.Request) (tag string, ok bool) {
	v, sent := r.Header[http.CanonicalHeaderKey(TagHeader)]
	if !sent {
		return "", true
	}
	if len(v) != 1 || !ValidTag(v[0]) {
		return "", false
	}
	return v[0], true
}

// TagUsage is what a workspace's calls under one tag cost: the settled
// charges in micro-dollars and the tokens the upstream reported. Open is
// how many of its reservations are not settled yet (their worst case is
// held, not charged): a client that wants the final figure waits for 0.
type TagUsage struct {
	Tag       string `json:"tag"`
	Calls     int64  `json:"calls"`
	Open      int64  `json:"open"`
	Charged   int64  `json:"charged_micro_usd"`
	TokensIn  int64  `json:"tokens_in"`
	TokensOut int64  `json:"tokens_out"`
}

// TagTotal sums ws's reservations under tag. Only ws's rows are read: a
// tag another workspace used is, to ws, a tag with no calls.
func (g *Gateway) TagTotal(ctx context.Context, ws, tag string) (TagUsage, error) {
	u := TagUsage{Tag: tag}
	err := g.db.sql.QueryRowContext(ctx, g.db.q(`SELECT COUNT(*),
		COALESCE(SUM(CASE WHEN state = 'open' THEN 1 ELSE 0 END), 0),
		COALESCE(SUM(charged), 0), COALESCE(SUM(tokens_in), 0), COALESCE(SUM(tokens_out), 0)
		FROM reservations WHERE workspace_id = ? AND tag = ?`), ws, tag).
		Scan(&u.Calls, &u.Open, &u.Charged, &u.TokensIn, &u.TokensOut)
	if err != nil {
		return u, fmt.Errorf("tag total: %w", err)
	}
	return u, nil
}
