// Package bisect finds the first bad commit of a range by testing K
// commits at once, each in its own confined fork.
//
// A commit's tree is never a checkout of its own: it is an O(1) fork of a
// pristine snapshot (a pid 1) of bad, whose history is a shallow fetch as
// deep as the range (every commit of it, whole; a long history before good
// is never copied), moved to the commit inside the fork's sandbox by a two-tree read-tree
// into a copy of the snapshot's index (only the paths that differ are
// written; the fork's .git stays read-only). Each round tests K commits
// spread evenly over what is still unknown, so a range of N commits takes
// about log_(K+1)(N) rounds. While a round's tests run, the next round's
// forks and sandboxes are started, each waiting for its commit on stdin,
// so a picked commit's test waits only for its tree; the time limit
// bounds the making of the tree, then the test from its start. The test command's status
// is read as `git bisect run` reads it: 0 good, 125 untestable (skipped),
// 1–127 bad, anything else (128 and up, a timeout, a limit) stops the
// bisect. The user's repository is only read, to name the two ends, list
// the range and make the snapshot: its bisect state, refs and index are
// never touched.
//
// Only bad's first-parent chain is searched: on a history with merges the
// answer can be a merge commit where `git bisect` would go into the
// merged branch.
package bisect
