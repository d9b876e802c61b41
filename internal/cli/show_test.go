package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/cli"
	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/record"
)

// TestShowPrintable: what a fork wrote that show quotes — a verdict's
// reason (a test's name), a finding (a line of its patch) — reaches the
// terminal escaped: no escape sequence, carriage return or byte that is
// not UTF-8 can redraw the screen or forge a line of forkbomb's. The
// control: the record holds the reason as the fork wrote it (JSON-escaped).
func TestShowPrintable(t *testing.T) {
	t.Parallel()
	runs := t.TempDir()
	const reason = "test TestX\x1b[2J\rforkbomb: fork 1 won\xff failed"
	const finding = "lib.go:3: adds testing.Testing()\x1b]0;owned\x07"
	const warning = "the untouched base fails Sentinel\x1b[1A\rforkbomb: all good"
	rec, err := record.Create(runs, record.Run{ID: "20261202-120000-abcdef", Task: "t", Status: event.RunNoWinner,
		Fork: []record.Fork{{N: 0, State: event.ForkExited, Verdict: event.Fail, Reason: reason, Findings: []string{finding}, Warnings: []string{warning}}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = rec
	if b, err := os.ReadFile(filepath.Join(runs, "20261202-120000-abcdef", "run.json")); err != nil || !strings.Contains(string(b), `\u001b[2J\rforkbomb: fork 1 won`) {
		t.Fatalf("control: the record does not hold the reason as the fork wrote it (%v)", err)
	}
	var out, errb bytes.Buffer
	if code := cli.Run(context.Background(), []string{"show", "--runs-dir", runs, "20261202-120000-abcdef"}, cli.IO{In: strings.NewReader(""), Out: &out, Err: &errb}, cli.Options{}); code != 0 {
		t.Fatalf("show: exit %d\n%s", code, errb.String())
	}
	got := out.String()
	if strings.ContainsAny(got, "\x1b\r\x07") || !strings.Contains(got, `\x1b[2J\rforkbomb: fork 1 won`) || !strings.Contains(got, `\x1b]0;owned\a`) ||
		!strings.Contains(got, `judge's warning: the untouched base fails Sentinel\x1b[1A\rforkbomb: all good`) {
		t.Errorf("show printed what the fork wrote unescaped, or lost it:\n%q", got)
	}
}
