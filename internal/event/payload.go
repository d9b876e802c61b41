package event

import "encoding/json"

// Payload is the data of one event: a struct of this package whose JSON
// is the event's "data" in events.jsonl (docs/RECORD.md). A kind written
// by more than one source (forkbomb's own api loop, an agent CLI's
// stream, the model proxy) has a struct for each, so that each source
// writes exactly the keys it always wrote: a field a source always sets
// is never omitempty, even at its zero value.
type Payload interface {
	Kind() Kind
}

// JSON is a value recorded as JSON when it is valid JSON (a model's
// tool-call arguments, as the model wrote them), and otherwise as a JSON
// string holding its text: a model's malformed arguments are kept, as
// text, and never break the line.
type JSON []byte

// MarshalJSON writes j as it is when it is valid JSON, else as a string.
func (j JSON) MarshalJSON() ([]byte, error) {
	if json.Valid(j) {
		return j, nil
	}
	return json.Marshal(string(j))
}

// UnmarshalJSON keeps the value's JSON as it is (a string stays quoted).
func (j *JSON) UnmarshalJSON(b []byte) error {
	*j = append((*j)[:0], b...)
	return nil
}

// The race's own events (internal/run).

// RunStartData: the run began.
type RunStartData struct {
	ID     string `json:"id"`
	Task   string `json:"task"`
	Forks  int    `json:"forks"`
	Engine string `json:"engine"`
	// EngineVersion: the agent CLI's own word on its version, bounded by
	// the engine; absent when the engine has none.
	EngineVersion string     `json:"engine_version,omitempty"`
	Base          string     `json:"base"`
	Test          string     `json:"test"`
	Limits        LimitsData `json:"limits"`
	// Network: "allow:HOST:PORT,…", only with --network allow:.
	Network string `json:"network,omitempty"`
}

// LimitsData are a fork's resource limits as run_start records them (0:
// none).
type LimitsData struct {
	Memory int64   `json:"memory"` // bytes
	Pids   int     `json:"pids"`
	CPUs   float64 `json:"cpus"`
	Text   string  `json:"text"` // as a person reads them
}

// ForkStartData: a fork's agent began, in its workspace.
type ForkStartData struct {
	Workspace string `json:"workspace"`
}

// ForkExitData: a fork's agent stopped.
type ForkExitData struct {
	State   ForkState `json:"state"`
	Exit    int       `json:"exit"`
	Seconds float64   `json:"seconds"`
	Reason  string    `json:"reason,omitempty"` // the limit, when one ended the agent
}

// JudgeStartData: the judge took a fork's patch.
type JudgeStartData struct {
	PatchBytes int `json:"patch_bytes"`
}

// VerdictData: the judge's word on a fork's patch.
type VerdictData struct {
	Verdict  Verdict  `json:"verdict"`
	Reason   string   `json:"reason"`
	Score    float64  `json:"score"`
	Stripped []string `json:"stripped"`
	// Findings: "FILE:LINE: CONSTRUCT (RULE)", when the patch holds any.
	Findings []string `json:"findings,omitempty"`
	// Warnings: the judge's, about the judgement rather than the patch
	// (hidden tests that add nothing, sentinels left unchecked because
	// the untouched base gets them wrong too), when it has any.
	Warnings []string `json:"warnings,omitempty"`
}

// WinnerData: a fork won.
type WinnerData struct {
	Reason string `json:"reason"`
}

// KillData: a losing fork was killed when another won (no data).
type KillData struct{}

// ErrorData: something went wrong with a fork or the run.
type ErrorData struct {
	Error string `json:"error"`
}

// RunEndData: the run ended.
type RunEndData struct {
	Status RunStatus `json:"status"`
	Winner int       `json:"winner"` // -1 without one
	// Review: the forks whose verdict is review, with needs-review.
	Review []int `json:"review,omitempty"`
}

func (RunStartData) Kind() Kind   { return RunStart }
func (ForkStartData) Kind() Kind  { return ForkStart }
func (ForkExitData) Kind() Kind   { return ForkExit }
func (JudgeStartData) Kind() Kind { return JudgeStart }
func (VerdictData) Kind() Kind    { return VerdictGiven }
func (WinnerData) Kind() Kind     { return Winner }
func (KillData) Kind() Kind       { return Kill }
func (ErrorData) Kind() Kind      { return Error }
func (RunEndData) Kind() Kind     { return RunEnd }
