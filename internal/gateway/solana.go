package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"strings"
	"unicode/utf8"
)

// Program ids the verifier recognises. Plain JSON-RPC over net/http: the
// verifier needs one read-only call, and an SDK would be more code to
// trust than the call itself.
const (
	tokenProgram     = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"
	token2022Program = "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb"
	memoProgramV1    = "Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo"
	memoProgramV2    = "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr"
	memoPrefix       = "forkbomb:"
)

// BurnOptions configure burn verification. With no Mint or RPC, POST
// /v1/burns answers 503 not_configured.
type BurnOptions struct {
	RPC  string // Solana JSON-RPC endpoint
	Mint string // the project's SPL token mint
	// CapMicroUSD: a burn worth more waits for `forkbomb gateway review`.
	CapMicroUSD int64
	// PriceWindow is the half-width, in seconds, of the window the
	// time-weighted average is taken over (default 900).
	PriceWindow int64
}

type instruction struct {
	Program   string          `json:"program"`
	ProgramID string          `json:"programId"`
	Parsed    json.RawMessage `json:"parsed"`
	Data      string          `json:"data"`
}

type tokenBalance struct {
	AccountIndex int    `json:"accountIndex"`
	Mint         string `json:"mint"`
	UI           struct {
		Amount   string `json:"amount"`
		Decimals int    `json:"decimals"`
	} `json:"uiTokenAmount"`
}

type txResult struct {
	BlockTime *int64 `json:"blockTime"`
	Meta      *struct {
		Err               json.RawMessage `json:"err"`
		PreTokenBalances  []tokenBalance  `json:"preTokenBalances"`
		PostTokenBalances []tokenBalance  `json:"postTokenBalances"`
		InnerInstructions []struct {
			Instructions []instruction `json:"instructions"`
		} `json:"innerInstructions"`
	} `json:"meta"`
	Transaction struct {
		Message struct {
			AccountKeys []struct {
				Pubkey string `json:"pubkey"`
			} `json:"accountKeys"`
			Instructions []instruction `json:"instructions"`
		} `json:"message"`
	} `json:"transaction"`
}

// verified is what a valid burn proved.
type verified struct {
	Workspace string
	Amount    *big.Int // base units of the mint
	Decimals  int
	BlockTime int64
}

// fetchTx asks the RPC for sig at finalized commitment. A null result is
// a transaction not (yet) finalized.
func (g *Gateway) fetchTx(ctx context.Context, sig string) (*txResult, error) {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "getTransaction",
		"params": []any{sig, map[string]any{"encoding": "jsonParsed", "commitment": "finalized", "maxSupportedTransactionVersion": 0}}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.opts.Burns.RPC, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("rpc: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := g.client.Do(req)
	if err != nil {
		return nil, &Refusal{Reason: "rpc_unavailable", Transient: true}
	}
	defer resp.Body.Close()
	var out struct {
		Result *txResult `json:"result"`
		Error  *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&out) != nil {
		return nil, &Refusal{Reason: "rpc_unavailable", Transient: true}
	}
	if out.Error != nil {
		if out.Error.Code == -32015 { // transaction version not supported
			return nil, &Refusal{Reason: "unsupported_version"}
		}
		return nil, &Refusal{Reason: "rpc_error", Transient: true}
	}
	if out.Result == nil {
		return nil, &Refusal{Reason: "not_finalized", Transient: true}
	}
	return out.Result, nil
}

// verifyTx checks everything a credit rests on; only the signature came
// from the client.
func (g *Gateway) verifyTx(ctx context.Context, tx *txResult) (*verified, error) {
	if tx.Meta == nil || tx.BlockTime == nil {
		return nil, &Refusal{Reason: "not_finalized", Transient: true}
	}
	if len(tx.Meta.Err) > 0 && string(tx.Meta.Err) != "null" {
		return nil, &Refusal{Reason: "failed"}
	}
	all := append([]instruction{}, tx.Transaction.Message.Instructions...)
	for _, in := range tx.Meta.InnerInstructions {
		all = append(all, in.Instructions...)
	}
	burned := map[string]*big.Int{} // account -> amount
	total := new(big.Int)
	decimals, sawBurn, memo, memos := -1, false, "", 0
	for _, in := range all {
		switch in.ProgramID {
		case tokenProgram, token2022Program:
			var p struct {
				Type string `json:"type"`
				Info struct {
					Account     string `json:"account"`
					Mint        string `json:"mint"`
					Amount      string `json:"amount"`
					TokenAmount *struct {
						Amount   string `json:"amount"`
						Decimals int    `json:"decimals"`
					} `json:"tokenAmount"`
				} `json:"info"`
			}
			if json.Unmarshal(in.Parsed, &p) != nil || (p.Type != "burn" && p.Type != "burnChecked") {
				continue
			}
			sawBurn = true
			if p.Info.Mint != g.opts.Burns.Mint {
				continue
			}
			amt := p.Info.Amount
			if p.Info.TokenAmount != nil {
				amt, decimals = p.Info.TokenAmount.Amount, p.Info.TokenAmount.Decimals
			}
			n, ok := new(big.Int).SetString(amt, 10)
			if !ok || n.Sign() <= 0 {
				return nil, &Refusal{Reason: "bad_amount"}
			}
			if burned[p.Info.Account] == nil {
				burned[p.Info.Account] = new(big.Int)
			}
			burned[p.Info.Account].Add(burned[p.Info.Account], n)
			total.Add(total, n)
		case memoProgramV1, memoProgramV2:
			var s string
			if json.Unmarshal(in.Parsed, &s) != nil || !utf8.ValidString(s) {
				// The RPC leaves a memo it cannot read as UTF-8 unparsed.
				return nil, &Refusal{Reason: "memo_invalid"}
			}
			if strings.HasPrefix(s, memoPrefix) {
				memo, memos = s, memos+1
			}
		}
	}
	switch {
	case total.Sign() == 0 && sawBurn:
		return nil, &Refusal{Reason: "wrong_mint"}
	case total.Sign() == 0:
		return nil, &Refusal{Reason: "no_burn"}
	case memos == 0:
		return nil, &Refusal{Reason: "memo_missing"}
	case memos > 1:
		return nil, &Refusal{Reason: "memo_ambiguous"}
	}
	// Each burned account's balance fell by exactly what was burned; a
	// closed account has no post balance, which is zero.
	keys := tx.Transaction.Message.AccountKeys
	bal := func(list []tokenBalance, acct string) (*big.Int, int, bool) {
		for _, b := range list {
			if b.AccountIndex >= 0 && b.AccountIndex < len(keys) && keys[b.AccountIndex].Pubkey == acct && b.Mint == g.opts.Burns.Mint {
				n, ok := new(big.Int).SetString(b.UI.Amount, 10)
				return n, b.UI.Decimals, ok
			}
		}
		return nil, 0, false
	}
	for acct, amt := range burned {
		pre, d, ok := bal(tx.Meta.PreTokenBalances, acct)
		if !ok {
			return nil, &Refusal{Reason: "balance_mismatch"}
		}
		post, _, ok := bal(tx.Meta.PostTokenBalances, acct)
		if !ok {
			post = new(big.Int)
		}
		if new(big.Int).Sub(pre, post).Cmp(amt) != 0 {
			return nil, &Refusal{Reason: "balance_mismatch"}
		}
		if decimals < 0 {
			decimals = d
		}
	}
	ws := strings.TrimPrefix(memo, memoPrefix)
	if _, err := g.Balance(ctx, ws); err != nil {
		if err == ErrNotFound {
			return nil, &Refusal{Reason: "unknown_workspace"}
		}
		return nil, err
	}
	return &verified{Workspace: ws, Amount: total, Decimals: decimals, BlockTime: *tx.BlockTime}, nil
}
