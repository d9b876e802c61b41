package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// Exit statuses. This file is the one place errors become statuses
// (exitCode) and the one place each verb's statuses are written down for
// its --help (exitHelp) and the README.
const (
	ExitOK = 0
	// ExitFailed: the verb could not do what was asked; the message says
	// why (workspace, runs, show, apply, demo).
	ExitFailed = 1
	// ExitUsage: a mistake on the command line (an unknown verb or flag,
	// a value a flag does not take, a wrong number of arguments).
	ExitUsage = 2

	// ExitNoWinner: run raced and no fork passed.
	ExitNoWinner = 1
	// ExitCouldNotRun: run could not race at all (bad flags, repository,
	// state folder, engine set-up); nothing was judged.
	ExitCouldNotRun = 2

	// ExitPatchFails: judge ran and a patch fails or is unknown.
	ExitPatchFails = 1
	// ExitCannotJudge: the judge itself could not run.
	ExitCannotJudge = 2

	// ExitNeedsReview: run and judge, when no patch fails (judge) or no
	// fork passed cleanly (run) but a patch passed the tests while adding
	// code that detects or inspects a test run: a person decides, never
	// forkbomb.
	ExitNeedsReview = 3

	// ExitUnverified: run, when no fork was crowned but one passed with
	// tests that caught fewer of its patch's mutants than --min-strength
	// asks: no verified winner.
	ExitUnverified = 4

	// ExitBisectAmbiguous: bisect ended with several candidates, every
	// commit between them untestable (exit 125).
	ExitBisectAmbiguous = 3

	// sandbox and workspace exec pass the command's own status, or:
	ExitTimeout       = sandbox.ExitTimeout       // 124: --timeout expired
	ExitSetup         = sandbox.ExitSetup         // 125: could not run it (flags, sandbox set-up)
	ExitNotExecutable = sandbox.ExitNotExecutable // 126
	ExitNotFound      = sandbox.ExitNotFound      // 127
	ExitKilledByLimit = sandbox.ExitKilledByLimit // 137: --memory, --pids or --max-output

	// ExitInterrupted: every verb, when Ctrl-C, SIGTERM or SIGHUP stopped
	// it (128 + SIGINT, the shell's convention).
	ExitInterrupted = 130
)

// exitHelp is the "Exit status" paragraph of each verb's --help.
func exitHelp(verb string) string {
	interrupted := fmt.Sprintf("%d when interrupted (Ctrl-C, SIGTERM).", ExitInterrupted)
	switch verb {
	case "run":
		return fmt.Sprintf("Exit status: %d when a fork won; %d when the race ran and no fork passed; %d when\nthe race could not run (bad flags, repository or state; nothing was judged);\n%d when it needs review: no fork passed cleanly, but one passed the tests with a\npatch that adds code detecting a test run (see 'forkbomb show'); %d when no\nverified winner: a fork passed, but its tests caught fewer of its patch's\nmutants than --min-strength asks; %s",
			ExitOK, ExitNoWinner, ExitCouldNotRun, ExitNeedsReview, ExitUnverified, interrupted)
	case "judge":
		return fmt.Sprintf("Exit status: %d when every patch passes, %d when one fails (or is unknown), %d\nwhen the judge itself could not run; %d when none fails but one needs review (it\npasses the tests and adds code that detects a test run: verdict \"review\"); %s", ExitOK, ExitPatchFails, ExitCannotJudge, ExitNeedsReview, interrupted)
	case "sandbox", "workspace exec":
		return fmt.Sprintf("Exit status: the command's own; %d when --timeout expired; %d when a\n--memory, --pids or --max-output limit killed it; %d when forkbomb could not run it\n(bad flags, or the sandbox could not be set up); %d when the command is not\nexecutable; %d when it is not found; %s",
			ExitTimeout, ExitKilledByLimit, ExitSetup, ExitNotExecutable, ExitNotFound, interrupted)
	}
	return fmt.Sprintf("Exit status: %d on success; %d when it failed (the message says why); %d for a\nmistake on the command line; %s", ExitOK, ExitFailed, ExitUsage, interrupted)
}

// documentExits gives every verb below root that does not say its exit
// statuses yet the general paragraph.
func documentExits(root *cobra.Command) {
	for _, c := range root.Commands() {
		if c.Runnable() && !strings.Contains(c.Long, "Exit status") {
			long := c.Long
			if long == "" {
				long = c.Short + "."
			}
			c.Long = withExitHelp(long, c.Name())
		}
		documentExits(c)
	}
}

// withExitHelp appends a verb's exit statuses to its long help.
func withExitHelp(long, verb string) string {
	return strings.TrimRight(long, "\n") + "\n\n" + exitHelp(verb)
}

// exitError carries an exit status decided by a command; msg, when set, is
// printed as one line, else err's message when err is set. err keeps the
// cause reachable with errors.Is.
type exitError struct {
	code int
	msg  string
	err  error
}

func (e *exitError) Error() string {
	if e.msg == "" && e.err != nil {
		return e.err.Error()
	}
	return e.msg
}

func (e *exitError) Unwrap() error { return e.err }

// withCode gives err the status code unless it already carries one (a
// usage error keeps its own).
func withCode(code int, err error) error {
	var ee *exitError
	if err == nil || errors.As(err, &ee) {
		return err
	}
	return &exitError{code: code, err: err}
}

// errUsage marks a mistake on the command line.
var errUsage = errors.New("usage")

// exitCode is the one place where errors become exit statuses. An error
// after the context was cancelled (Ctrl-C, SIGTERM, SIGHUP) is an
// interruption, whichever verb it comes from.
func exitCode(ctx context.Context, err error, stderr io.Writer) int {
	if err == nil {
		return ExitOK
	}
	if ctx.Err() != nil || errors.Is(err, context.Canceled) {
		var ee *exitError
		msg := "interrupted"
		if errors.As(err, &ee) && ee.msg != "" {
			msg = ee.msg
		}
		fmt.Fprintf(stderr, "forkbomb: %s\n", msg)
		return ExitInterrupted
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if msg := ee.Error(); msg != "" {
			fmt.Fprintf(stderr, "forkbomb: %s\n", strings.TrimPrefix(msg, errUsage.Error()+": "))
		}
		return ee.code
	}
	if errors.Is(err, errUsage) {
		fmt.Fprintf(stderr, "forkbomb: %v\n", strings.TrimPrefix(err.Error(), errUsage.Error()+": "))
		return ExitUsage
	}
	fmt.Fprintf(stderr, "forkbomb: %v\n", err)
	return ExitFailed
}
