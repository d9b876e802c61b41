package engine

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// countTokens answers the Messages API's token counting endpoint, which
// Claude Code may call before a long request: a rough count (a token per
// four bytes, as the scripted usage says), never an error that would
// make the CLI retry against a model that is not there.
func (s *Scripted) countTokens(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("x-api-key") != s.Key && r.Header.Get("Authorization") != "Bearer "+s.Key {
		http.Error(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid key"}}`, http.StatusUnauthorized)
		return
	}
	n, _ := io.Copy(io.Discard, io.LimitReader(r.Body, 16<<20))
	w.Header().Set("Content-Type", "application/json")
	b, _ := json.Marshal(map[string]any{"input_tokens": n / 4})
	fmt.Fprintf(w, "%s\n", b)
}
