// Package ui is the web view of forkbomb's runs: a server on 127.0.0.1
// that streams a run's record to a page as it grows (Server-Sent Events),
// and a static export of the same page reading a bundled copy of the
// record. The page is a reader of the record, never a second source of
// truth: a race in this process only wakes the server (Live) when a line
// was appended; the events themselves are always read back from
// events.jsonl, redacted as the record wrote them, so a live view and a
// view of another process's run show the same events. It shows eval's
// board too (#board): the standings of engines on stored tasks with the
// verifier's strength, read-only, each attempt opening its run.
//
// Everything in the record came, in the end, from a model or from a
// process in a fork, so the server treats it as hostile data: every read
// is bounded (a line cap, a line count cap, a file cap, paging), and the
// page renders every string with textContent (assets/app.js), under a
// Content-Security-Policy that allows no inline script.
package ui
