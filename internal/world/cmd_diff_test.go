package world

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/testutil"
)

// TestDiffAndOdMatchTheHost: the world's diff prints GNU diff's normal format by default and a
// unified diff with hunk headers under -u/-U (issue 21: it printed no hunk header and added
// lines before removed ones), and od prints what the host's od prints, for the same files. The
// unified header's timestamps are the host's own and are not compared.
func TestDiffAndOdMatchTheHost(t *testing.T) {
	t.Parallel()
	testutil.Need(t, "diff", "od")
	files := map[string]string{
		"x1": "a\nb\nc\nd\n", "x2": "a\nB\nc\nd\ne\n",
		"y1": "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "y2": "0\n1\n2\n3\n4\n5\n6\n7\n8\n9\n11\n12\n13\n",
		"e": "", "z": "only\n", "bin": "ab\n\x01\xff\x00\x00" + strings.Repeat("q", 40) + "\t\r",
	}
	dir := t.TempDir()
	w := New()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := w.FS.WriteFile("/work/"+name, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, cmd := range []string{
		"diff x1 x2", "diff x2 x1", "diff y1 y2", "diff e z", "diff z e", "diff x1 x1", "diff -q x1 x2",
		"diff -u x1 x2", "diff -u y1 y2", "diff -U1 y1 y2", "diff -U0 y1 y2", "diff -u e z", "diff -u z e",
		"od bin", "od -c bin", "od -x bin", "od -An -t x1 bin", "od -t x1 bin", "od -b bin", "od -A d -t d2 bin",
		"od -An -c x1", "od -t x4 bin", "od -t u1 bin",
	} {
		t.Run(cmd, func(t *testing.T) {
			host := exec.Command("sh", "-c", cmd+"; echo status=$?")
			host.Dir = dir
			want, _ := host.CombinedOutput()
			res, err := w.Exec(context.Background(), cmd+"; echo status=$?", nil, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			got := string(res.Stdout) + string(res.Stderr)
			if strings.Contains(cmd, "-u") || strings.Contains(cmd, "-U") {
				want, got = []byte(dropHeader(string(want))), dropHeader(got)
			}
			if got != string(want) {
				t.Errorf("world:\n%s\nhost:\n%s", got, want)
			}
		})
	}
}

// dropHeader removes a unified diff's ---/+++ lines (the host's carry timestamps).
func dropHeader(s string) string {
	var keep []string
	for _, l := range strings.SplitAfter(s, "\n") {
		if !strings.HasPrefix(l, "--- ") && !strings.HasPrefix(l, "+++ ") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "")
}
