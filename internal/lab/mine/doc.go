// Package mine turns a repository's own history into stored tasks
// (`forkbomb task mine`). It walks the recent first-parent commits of a
// snapshot of the repository (which is only read) and keeps a commit that
// changes code and tests together when, judged in confined forks by the
// same judge a race uses, the commit's tests fail on its parent with the
// parent's code and pass with the commit's code (FAIL_TO_PASS), every test
// that passed on the parent passes with the commit (PASS_TO_PASS), and
// both outcomes hold three times over (a flaky test is not a task). So
// every kept task is known solvable — its gold patch, the commit's code
// change, passes — and known to discriminate — the empty patch fails.
//
// A kept task is the parent as base, the commit's test files as hidden
// tests, a prompt from the commit's message and the tests that must come
// to pass, and the test command given or detected. Every other commit is
// listed with the reason it was skipped.
package mine
