package judge

import (
	"bytes"
	"fmt"
	"strconv"
)

// The sentinel-only run (sentinelPlan.second, see sentinel_select.go) runs
// in the same sandbox as the test command, right after it — the same
// judged copy, set up once (patch, hidden tests, sentinels), so the code
// under test loads the same way in both — and the judge reads the two
// runs' outputs apart. The sandbox's script becomes:
//
//	exec 2>&1
//	/bin/sh -s …                     (the set-up, read from stdin)
//	THE COMMAND
//	forkbomb_status=$?
//	printf '\n%s\n' BEGIN
//	GOFLAGS=… THE SENTINEL-ONLY RUN
//	printf '\n%s %d\n' END "$?"
//	exit $forkbomb_status
//
// The sandbox's exit status stays the command's own. Both runs write to
// one pipe (stderr joined to stdout first: the sandbox copies the two
// streams apart and would lose their order), so what each wrote comes in
// the order it was written. The command's own part is what precedes the
// FIRST begin line; the sentinel run's is what follows the LAST begin line,
// up to the last end line after it, whose number is its exit status.
//
// Limits. Nothing in the sandbox can be kept from the code under test:
// the markers (BEGIN, END: a fresh random word each) are in the script, which it can
// read from /proc, and every place the script could write it can write
// too (same user, same namespaces). So:
//   - code in the command's own run that prints a begin line early only
//     cuts its own part short, and what it prints after comes before the
//     last begin line: it is in neither part;
//   - code in the sentinel-only run that prints begin or end lines of its
//     own replaces that run's output with a forgery — which is what the
//     sentinels are there to catch: it must get every sentinel right
//     without knowing which tests they are;
//   - a process the command's own run left running can add lines to the
//     sentinel run's part; a failure counts over a pass of the same name
//     (Results.add), so it cannot turn a sentinel's real failure into a
//     pass, but it could kill that run and forge all of its part — which,
//     again, needs telling the sentinels from the real tests;
//   - the two runs can be told apart by code that looks: the sentinel
//     run's arguments name the sentinels, and a file the first run leaves
//     marks the second. Code that behaves only in the run it knows to be
//     the sentinels' defeats them: this is "code that tells sentinels from
//     real tests", which the judge does not defend against.
//
// Both runs share --timeout: a run that times out has no verdict on its
// sentinels (judgeOne).

// runMarks are the lines that frame the sentinel-only run's output.
type runMarks struct{ begin, end string }

func newRunMarks() runMarks {
	w := randWord(upperAlpha, 16)
	return runMarks{begin: "forkbomb-judge-sentinel-run-" + w, end: "forkbomb-judge-sentinel-run-end-" + w}
}

// script is what follows the command in the sandbox's script.
func (m runMarks) script(sentinelCmd string) string {
	return fmt.Sprintf("forkbomb_status=$?\nprintf '\\n%%s\\n' %s\n%s\nprintf '\\n%%s %%d\\n' %s \"$?\"\nexit $forkbomb_status",
		shellQuote(m.begin), sentinelCmd, shellQuote(m.end))
}

// split cuts a run's output into the command's own part and the sentinel
// run's, and reads the latter's exit status.
func (m runMarks) split(out []byte) (own, sentinels []byte, r *sentinelRun) {
	r = &sentinelRun{}
	begin := []byte("\n" + m.begin + "\n")
	first := bytes.Index(out, begin)
	if first < 0 {
		return out, nil, r
	}
	r.started = true
	own = out[:first]
	rest := out[bytes.LastIndex(out, begin)+len(begin):]
	end := []byte("\n" + m.end + " ")
	if i := bytes.LastIndex(rest, end); i >= 0 {
		line := rest[i+len(end):]
		if j := bytes.IndexByte(line, '\n'); j >= 0 {
			if n, err := strconv.Atoi(string(line[:j])); err == nil {
				r.finished, r.exit = true, n
			}
		}
		rest = rest[:i]
	}
	r.results = parse(rest)
	return own, rest, r
}
