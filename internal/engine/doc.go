// Package engine is the model side of an agent in a fork: forkbomb's own
// tool loop over the Anthropic Messages API (RunAnthropic) and
// OpenAI-compatible chat endpoints (RunOpenAI), the editor tool it hands
// the model (Tree), and a scripted model server that stands in for the
// network in tests. The loop runs in the trusted process, talks to a
// model, and gives the model exactly two tools — a shell whose every
// command the caller runs in the fork's sandbox (Config.Shell), and an
// editor that runs in-process on the fork's files and re-checks every path
// (no "..", no symlink, nothing under .git in any letter case, no write
// through a hard link). The command engine, an agent program run whole
// inside the sandbox, needs nothing of this package: internal/run starts it.
package engine
