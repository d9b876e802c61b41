package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// TestDemoReport: the phases come from the record (events.jsonl times,
// verdict.json timings); a fork the record says little about gets what is
// known of it, and nothing is made up.
func TestDemoReport(t *testing.T) {
	dir := t.TempDir()
	events := `{"v":1,"time":"2026-01-01T00:00:00Z","type":"run_start"}
{"v":1,"time":"2026-01-01T00:00:00.5Z","type":"fork_start","fork":0}
{"v":1,"time":"2026-01-01T00:00:00.6Z","type":"fork_start","fork":1}
{"v":1,"time":"2026-01-01T00:00:02.6Z","type":"fork_exit","fork":1}
{"v":1,"time":"2026-01-01T00:00:02.7Z","type":"judge_start","fork":1}
{"v":1,"time":"2026-01-01T00:00:05.7Z","type":"verdict","fork":1}
not json
`
	if err := os.WriteFile(filepath.Join(dir, "events.jsonl"), []byte(events), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "forks", "1"), 0o755); err != nil {
		t.Fatal(err)
	}
	verdict := `{"baseline":{"ms":1500,"cached":false},"timings_ms":{"queue":100,"fork":200,"test":2700,"total":3000}}`
	if err := os.WriteFile(filepath.Join(dir, "forks", "1", "verdict.json"), []byte(verdict), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &demoClock{start: time.Now()}
	c.step("Go build cache", time.Now().Add(-3*time.Second), "warmed")
	c.judged.Store(int64(2 * time.Second))
	var out bytes.Buffer
	c.report(&out, dir, []string{"cheat", "honest", "quitter"})
	for _, want := range []string{
		`(?m)^Go build cache +3\.0s  warmed$`,
		`(?m)^pid 1 and forks +0\.5s `,
		`(?m)^judge ready +2\.0s .*; baseline test run 1\.5s$`,
		`(?m)^fork 1 \(honest\) +2\.0s  agent; judge 3\.0s \(queue 0\.1s, fork 0\.2s, apply and test run 2\.7s\)$`,
		`(?m)^total +[0-9.]+s$`,
	} {
		if !regexp.MustCompile(want).Match(out.Bytes()) {
			t.Errorf("no line matching %s in\n%s", want, out.String())
		}
	}
	for _, unwanted := range []string{`(?m)^fork 0 `, `(?m)^fork 2 `} {
		// fork 0 started but never exited; fork 2 is not in the record
		if regexp.MustCompile(unwanted).Match(out.Bytes()) {
			t.Errorf("a line matching %s, for a fork with no agent span, in\n%s", unwanted, out.String())
		}
	}
}
