// Package engine drives an agent in a fork. The api engine is forkbomb's
// own tool loop: it runs in the trusted process, talks to a model, and
// gives the model exactly two tools — a shell whose every command runs in
// the fork's sandbox, and an editor that runs in-process on the fork's
// files and re-checks every path (no "..", no symlink, nothing under .git
// in any letter case, no write through a hard link).
package engine
