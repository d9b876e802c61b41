package judge

import (
	"errors"
	"slices"

	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// judgeSettings names, for a person, the parts of a test run's sandbox
// policy that the judge fills in itself: none of them is a flag of the
// sandbox command, and none was passed by the user as such.
var judgeSettings = map[string]string{
	"ReadOnly":  "the judge's own read-only folder",
	"Hide":      "a folder the judge hides from test runs",
	"Workdir":   "the judged copy",
	"Overlay":   "the judged copy",
	"Scratch":   "the judge's build cache",
	"SetEnv":    "the test runner's environment",
	"Command":   "the test command",
	"Memory":    "--memory",
	"Pids":      "--pids",
	"CPUs":      "--cpus",
	"Timeout":   "--timeout",
	"MaxOutput": "the judge's output limit",
}

// ownWords words a refusal of the policy the judge built in the judge's
// terms: a hidden tests folder the sandbox will not expose is --hidden,
// not the --ro of 'forkbomb sandbox' the user never passed. The error is
// still a *sandbox.PolicyError (and an ErrInvalidPolicy) with its field
// and cause; other errors pass through.
func (o Options) ownWords(err error) error {
	var pe *sandbox.PolicyError
	if !errors.As(err, &pe) {
		return err
	}
	name, ok := judgeSettings[pe.Field]
	if !ok {
		name = "the judge's own " + pe.Field
	}
	if pe.Field == "ReadOnly" && slices.Contains(o.Hidden, pe.Value) {
		name = "--hidden"
		// a copy the judge made of a folder inside the repository is
		// named by the folder the user passed
		if from, ok := o.stagedFrom[pe.Value]; ok {
			c := pe.Setting(name)
			c.Value = from
			return c
		}
	}
	return pe.Setting(name)
}
