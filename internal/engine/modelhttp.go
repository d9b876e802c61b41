package engine

// The model APIs are spoken here directly (JSON over HTTP, server-sent
// events back) rather than through the vendors' SDKs. The SDKs were 38 of
// the binary's 50 MB, and their package initialisers ran in every forkbomb
// process — also in each sandbox's init, which is this same binary
// re-executed — at about 2 ms of CPU and wall time per process start
// (issue 10: `forkbomb sandbox -- true` went from 18.6 to 14.3 ms with
// them out). The two loops use one request shape each and a handful of
// stream events, which is all that is implemented.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Bounds on what a model endpoint can make forkbomb read: one event line,
// a whole streamed response, and an error body.
const (
	maxEventLine  = 16 << 20
	maxStreamSize = 256 << 20
	maxErrorBody  = 64 << 10
	maxRetries    = 4
)

// apiRequest is one streaming POST to a model endpoint.
type apiRequest struct {
	url     string
	headers map[string]string // the key among them: never logged, never in an error
	body    any
}

// apiError is a non-2xx answer, with the endpoint's own message.
type apiError struct {
	Status  int
	Message string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Status, http.StatusText(e.Status), e.Message)
}

// retryable says whether a status is worth another try, as the vendors'
// SDKs do: timeouts, conflicts, rate limits and server errors.
func retryable(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusConflict ||
		status == http.StatusTooManyRequests || status >= 500
}

// stream posts req and calls onEvent for each server-sent event of the
// answer (its event name, empty for data-only streams, and its data),
// retrying a refused or failed connection and retryable statuses with
// backoff. Once an event was delivered nothing is retried: the caller
// has acted on it.
func stream(ctx context.Context, req apiRequest, onEvent func(name string, data []byte) error) error {
	body, err := json.Marshal(req.body)
	if err != nil {
		return fmt.Errorf("encode request: %w", err)
	}
	for attempt := 0; ; attempt++ {
		resp, err := post(ctx, req, body)
		var wait time.Duration
		switch {
		case err != nil:
			if ctx.Err() != nil || attempt == maxRetries || isRedirect(err) {
				return err
			}
			wait = backoff(attempt, nil)
		case resp.StatusCode/100 != 2:
			e := readAPIError(resp)
			if !retryable(resp.StatusCode) || attempt == maxRetries {
				return e
			}
			wait = backoff(attempt, resp.Header)
		default:
			defer resp.Body.Close()
			return readEvents(io.LimitReader(resp.Body, maxStreamSize), onEvent)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

func post(ctx context.Context, req apiRequest, body []byte) (*http.Response, error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, req.url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("model request: %w", err)
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "text/event-stream")
	for k, v := range req.headers {
		hr.Header.Set(k, v)
	}
	resp, err := noRedirects.Do(hr)
	if err != nil {
		return nil, err // *url.Error: names the URL, never a header
	}
	if resp.StatusCode/100 == 3 {
		resp.Body.Close()
		return nil, errRedirect
	}
	return resp, nil
}

var errRedirect = errors.New("model endpoint redirected; redirects are not followed")

// noRedirects is the HTTP client of every model call: a redirect could
// carry the key to another host.
var noRedirects = &http.Client{
	Timeout:       10 * time.Minute,
	CheckRedirect: func(*http.Request, []*http.Request) error { return errRedirect },
}

func isRedirect(err error) bool { return errors.Is(err, errRedirect) }

// readAPIError reads a bounded error body and takes its message from
// either vendor's shape ({"error": {"message": ...}}), else the text.
func readAPIError(resp *http.Response) error {
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var shaped struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	msg := strings.TrimSpace(string(b))
	if json.Unmarshal(b, &shaped) == nil && shaped.Error.Message != "" {
		msg = shaped.Error.Message
	}
	return &apiError{Status: resp.StatusCode, Message: truncate(msg, 2048)}
}

// backoff is the wait before retry attempt+1: what the endpoint asked for
// (retry-after-ms, retry-after in seconds) if it is sensible, else 0.5 s
// doubling to at most 8 s, less up to a quarter of jitter.
func backoff(attempt int, h http.Header) time.Duration {
	if h != nil {
		if ms, err := strconv.ParseFloat(h.Get("retry-after-ms"), 64); err == nil && ms > 0 && ms <= 60_000 {
			return time.Duration(ms * float64(time.Millisecond))
		}
		if s, err := strconv.ParseFloat(h.Get("retry-after"), 64); err == nil && s > 0 && s <= 60 {
			return time.Duration(s * float64(time.Second))
		}
	}
	d := min(500*time.Millisecond<<attempt, 8*time.Second)
	return d - time.Duration(rand.Float64()*0.25*float64(d))
}

// readEvents splits a server-sent event stream into events: "event:"
// names the next, "data:" lines are joined with newlines, a blank line
// ends one; comments and other fields are skipped. A line longer than
// maxEventLine ends the stream with an error.
func readEvents(r io.Reader, onEvent func(name string, data []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxEventLine)
	var name string
	var data []byte
	flush := func() error {
		if data == nil {
			name = ""
			return nil
		}
		err := onEvent(name, data)
		name, data = "", nil
		return err
	}
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			if err := flush(); err != nil {
				return err
			}
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			name = string(value)
		case "data":
			if data != nil {
				data = append(data, '\n')
			}
			data = append(append([]byte{}, data...), value...)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("model stream: %w", err)
	}
	return flush()
}
