package testutil

import (
	"bytes"
	"io"
	"net/http"
)

// WholeBody wraps a handler that passes requests on (an
// httputil.ReverseProxy in a test): it reads each request's body whole and
// hands the handler a copy. A proxy that forwards net/http's own body of
// the incoming request can have it closed by the server, once the answer's
// header is written, while the transport still reads it; the transport then
// drops the upstream connection and the answer reaches the client cut short
// ("unexpected EOF"; seen in CI about once in a thousand exchanges).
// internal/modelproxy reads bodies whole for the same reason.
func WholeBody(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		h.ServeHTTP(w, r)
	})
}
