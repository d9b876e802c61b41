package event

import "time"

// Kind is what happened: the "type" of an events.jsonl line.
type Kind string

// The kinds a race emits; each one's payloads are in payload*.go.
const (
	RunStart      Kind = "run_start"
	ForkStart     Kind = "fork_start"
	ModelRequest  Kind = "model_request"  // a call to the model (api engine, or "via":"proxy")
	ModelResponse Kind = "model_response" // its answer (api engine, or "via":"proxy": status, tokens, cost)
	ToolCall      Kind = "tool_call"      // api engine: the model called a tool
	ToolResult    Kind = "tool_result"    // api engine: what the tool returned
	ForkExit      Kind = "fork_exit"      // the fork's agent stopped
	Limit         Kind = "limit"          // api engine: a resource limit ended one shell command
	JudgeStart    Kind = "judge_start"
	VerdictGiven  Kind = "verdict"
	Winner        Kind = "winner"
	Kill          Kind = "kill" // a losing fork killed when another won
	Error         Kind = "error"
	RunEnd        Kind = "run_end"
	NetConnect    Kind = "net_connect"   // a fork asked the proxy for a host (--network allow:)
	GatewayUsage  Kind = "gateway_usage" // hosted engine: what the gateway charged the fork, and the balance left
	Verified      Kind = "verified"      // the verifier's word on a passing fork's tests (VerifiedData)
	Compared      Kind = "compared"      // two passing forks judged against each other's tests (ComparedData)
)

// ForkState is where a fork's agent is, and how it ended.
type ForkState string

const (
	ForkRunning  ForkState = "running"
	ForkExited   ForkState = "exited"
	ForkCrashed  ForkState = "crashed"   // a non-zero exit, or the engine could not drive the agent
	ForkTimedOut ForkState = "timed-out" // --timeout ended the agent
	ForkFailed   ForkState = "failed"    // a resource limit ended the agent; the reason names it
	ForkKilled   ForkState = "killed"    // the race stopped it (another fork won, or the run ended)
	// ForkVerifying: the fork passed and the verifier is judging mutants
	// of its patch; the state it had before comes back when it is done.
	ForkVerifying ForkState = "verifying"
)

// RunStatus is how a run stands, or how it ended.
type RunStatus string

const (
	RunRunning  RunStatus = "running"
	RunWon      RunStatus = "won"
	RunNoWinner RunStatus = "no-winner"
	// RunNeedsReview: no fork passed cleanly, but one or more passed the
	// tests with a patch whose text holds code that detects or inspects a
	// test run (judge.Finding): never crowned automatically.
	RunNeedsReview RunStatus = "needs-review"
	// RunUnverified: no fork was crowned, but one or more passed with a
	// patch whose mutants the tests caught below --min-strength: the
	// tests are too weak to vouch for the fix (VerifiedData).
	RunUnverified  RunStatus = "unverified"
	RunInterrupted RunStatus = "interrupted" // Ctrl-C, or forkbomb was killed
	RunFailed      RunStatus = "failed"      // the run could not go on (its record could not be written)
)

// Verdict is the judge's word on one patch.
type Verdict string

const (
	Pass    Verdict = "pass"
	Fail    Verdict = "fail"
	Unknown Verdict = "unknown" // the judge could not tell
	// Review: the tests pass, but the patch adds code that detects or
	// inspects a test run (the verdict's findings say where). Such a patch
	// never wins over a clean pass, and never wins on its own.
	Review Verdict = "review"
)

// Event is one thing that happened in a race.
type Event struct {
	Fork int // the fork's number; RunLevel for the run as a whole
	// Time is when it happened (UTC); the sink sets it when it is zero.
	Time time.Time
	// Data is what happened: a payload of this package, which says its
	// kind. It is never nil (a kind with nothing to say has an empty
	// struct). Subscribers read it and never change it.
	Data Payload
}

// Kind is the kind of the event's payload.
func (e Event) Kind() Kind { return e.Data.Kind() }

// RunLevel is the Fork of an event about the whole run.
const RunLevel = -1
