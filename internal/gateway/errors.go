package gateway

import "errors"

var (
	// ErrInsufficient is a debit or reservation the balance cannot cover.
	ErrInsufficient = errors.New("insufficient balance")
	// ErrNotFound is a workspace, key or record that does not exist.
	ErrNotFound = errors.New("not found")
	// ErrNotConfigured is a burn verification with no mint or RPC endpoint set.
	ErrNotConfigured = errors.New("burn verification not configured")
	// ErrBadSecret is a secret file that cannot sign keys.
	ErrBadSecret = errors.New("bad gateway secret")
)

// Refusal is a burn the verifier will not credit, with the reason the
// client is told ("not_finalized", "wrong_mint", …). Final refusals are
// stored so a replay answers the same; transient ones are not.
type Refusal struct {
	Reason    string
	Transient bool // not stored: asking again later may succeed
}

func (r *Refusal) Error() string { return "burn refused: " + r.Reason }
