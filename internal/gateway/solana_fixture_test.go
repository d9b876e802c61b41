package gateway

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Fixtures shaped like a real getTransaction (encoding jsonParsed,
// commitment finalized) answer: accountKeys as objects, parsed SPL Token
// instructions, memos parsed to strings (or left as base58 data when not
// UTF-8), token balances by account index.
const (
	testMint  = "FbMint1111111111111111111111111111111111111"
	otherMint = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"
	srcATA    = "SrcAta11111111111111111111111111111111111111"
	owner     = "Owner111111111111111111111111111111111111111"
)

type fx struct {
	program   string // token program id
	kind      string // burn or burnChecked
	mint      string
	amount    string
	inner     bool
	memos     []any // string: parsed memo; []byte: unparsed (non-UTF-8)
	failed    bool
	pre, post string // "" post: account closed
	blockTime int64
}

func (f fx) tx(ws string) map[string]any {
	info := map[string]any{"account": srcATA, "mint": f.mint, "authority": owner}
	if f.kind == "burnChecked" {
		info["tokenAmount"] = map[string]any{"amount": f.amount, "decimals": 6, "uiAmount": nil, "uiAmountString": f.amount}
	} else {
		info["amount"] = f.amount
	}
	burn := map[string]any{"program": "spl-token", "programId": f.program, "stackHeight": nil,
		"parsed": map[string]any{"type": f.kind, "info": info}}
	var ins []any
	for _, m := range f.memos {
		switch m := m.(type) {
		case string:
			ins = append(ins, map[string]any{"program": "spl-memo", "programId": memoProgramV2, "parsed": m, "stackHeight": nil})
		case []byte:
			ins = append(ins, map[string]any{"programId": memoProgramV2, "accounts": []any{}, "data": "3yZe7d", "stackHeight": nil})
		}
	}
	inner := []any{}
	if f.inner {
		ins = append(ins, map[string]any{"programId": "Wrapper1111111111111111111111111111111111111", "accounts": []any{srcATA}, "data": "2", "stackHeight": nil})
		inner = append(inner, map[string]any{"index": len(ins) - 1, "instructions": []any{burn}})
	} else {
		ins = append([]any{burn}, ins...)
	}
	bal := func(a string) map[string]any {
		return map[string]any{"accountIndex": 1, "mint": f.mint, "owner": owner, "programId": f.program,
			"uiTokenAmount": map[string]any{"amount": a, "decimals": 6, "uiAmount": 0, "uiAmountString": a}}
	}
	post := []any{}
	if f.post != "" {
		post = append(post, bal(f.post))
	}
	var err any
	if f.failed {
		err = map[string]any{"InstructionError": []any{0, map[string]any{"Custom": 1}}}
	}
	return map[string]any{
		"blockTime": f.blockTime, "slot": 312000000, "version": 0,
		"meta": map[string]any{"err": err, "fee": 5000, "innerInstructions": inner, "logMessages": []any{},
			"preBalances": []any{1000000, 2039280}, "postBalances": []any{995000, 2039280},
			"preTokenBalances": []any{bal(f.pre)}, "postTokenBalances": post,
			"status": map[string]any{"Ok": nil}, "computeUnitsConsumed": 6000},
		"transaction": map[string]any{
			"signatures": []any{"sig"},
			"message": map[string]any{
				"accountKeys": []any{
					map[string]any{"pubkey": owner, "signer": true, "source": "transaction", "writable": true},
					map[string]any{"pubkey": srcATA, "signer": false, "source": "transaction", "writable": true},
					map[string]any{"pubkey": f.mint, "signer": false, "source": "transaction", "writable": true},
				},
				"instructions": ins, "recentBlockhash": "Bh1111111111111111111111111111111111111111",
			},
		},
	}
}

// rpcServer is a scripted Solana JSON-RPC endpoint: getTransaction
// answers from results (a map value of nil is the null of a transaction
// not finalized; "unsupported" is the -32015 error).
type rpcServer struct {
	*httptest.Server
	mu      sync.Mutex
	results map[string]any
	calls   atomic.Int64
	bad     atomic.Int64 // requests without finalized commitment
	// gate, when set, holds every answer until that many requests came
	// (or 10 s passed): concurrent verifications all pass the "already
	// stored?" check before any stores, so only the database can keep
	// the credit single.
	gate    int64
	arrived chan struct{}
}

func newRPC(t testing.TB) *rpcServer {
	s := &rpcServer{results: map[string]any{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n := s.calls.Add(1); s.gate > 0 {
			if n == s.gate {
				close(s.arrived)
			}
			select {
			case <-s.arrived:
			case <-time.After(10 * time.Second):
			}
		}
		var req struct {
			ID     any               `json:"id"`
			Method string            `json:"method"`
			Params []json.RawMessage `json:"params"`
		}
		body, _ := io.ReadAll(r.Body)
		if json.Unmarshal(body, &req) != nil || req.Method != "getTransaction" || len(req.Params) != 2 {
			http.Error(w, "bad", 400)
			return
		}
		var sig string
		var cfg struct {
			Encoding   string `json:"encoding"`
			Commitment string `json:"commitment"`
			MaxVersion *int   `json:"maxSupportedTransactionVersion"`
		}
		json.Unmarshal(req.Params[0], &sig)
		json.Unmarshal(req.Params[1], &cfg)
		if cfg.Commitment != "finalized" || cfg.Encoding != "jsonParsed" || cfg.MaxVersion == nil {
			s.bad.Add(1)
		}
		s.mu.Lock()
		res := s.results[sig]
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if res == "unsupported" {
			fmt.Fprintf(w, `{"jsonrpc":"2.0","error":{"code":-32015,"message":"Transaction version (1) is not supported by the requesting client. Please try the request again with the following configuration parameter: \"maxSupportedTransactionVersion\": 1"},"id":1}`)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "result": res, "id": req.ID})
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *rpcServer) set(sig string, v any) {
	s.mu.Lock()
	s.results[sig] = v
	s.mu.Unlock()
}

// sig makes a base58 signature-shaped string from n.
func sig(n int) string {
	return strings.ReplaceAll(fmt.Sprintf("5%087d", n), "0", "A")
}
