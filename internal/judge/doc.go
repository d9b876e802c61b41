// Package judge decides whether a patch fixes a repository, reading only
// the patch: its edits to tests and test configuration are stripped, the
// rest is applied to a fresh fork of the base, hidden tests are laid over
// it, the user's test command runs there confined and offline, and the
// outcome is compared, test by test, with the same command on the
// untouched base. Nothing a model says is read; only the filesystem, exit
// statuses and the test runner's own output.
package judge
