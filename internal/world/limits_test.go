package world

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLimits: each limit ends the exec with status 124 and a message naming it, and the world
// file is left as it was. The controls run the same script under a roomy limit.
func TestLimits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, script, want string
		tight, roomy       Limits
	}{
		{"commands", `echo x > /work/f; i=0; while [ $i -lt 500 ]; do i=$((i+1)); done`, "commands",
			Limits{MaxCommands: 100}, Limits{MaxCommands: 10_000}},
		{"output", `echo x > /work/f; seq 100000`, "output bytes", Limits{MaxOutput: 1000}, Limits{}},
		{"size", `echo x > /work/f; seq 100000 > /work/big`, "world size", Limits{MaxSize: 10_000}, Limits{}},
		{"gzip bomb", `echo x > /work/f; seq 200000 | gzip > /work/z.gz; gunzip -c /work/z.gz > /work/out`, "world size",
			Limits{MaxSize: 300_000}, Limits{}},
		{"wall time", `echo x > /work/f; sleep 5`, "wall time", Limits{WallTime: 50 * time.Millisecond}, Limits{WallTime: time.Minute, MaxCommands: 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(t.TempDir(), "w.world")
			if err := New().Save(file); err != nil {
				t.Fatal(err)
			}
			before, _ := os.ReadFile(file)
			res, err := ExecFile(context.Background(), file, tc.script, nil, tc.tight)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != 124 || !strings.Contains(res.Limit, tc.want) || !bytes.Contains(res.Stderr, []byte("nothing of this exec was kept")) {
				t.Errorf("status %d limit %q stderr %q", res.Status, res.Limit, res.Stderr)
			}
			if after, _ := os.ReadFile(file); !bytes.Equal(before, after) {
				t.Errorf("the world changed")
			}
			if _, err := Load(file, 0); err != nil {
				t.Errorf("world unreadable after the limit: %v", err)
			}
			if tc.name == "wall time" {
				return // the control would sleep for real
			}
			res, err = ExecFile(context.Background(), file, tc.script, nil, tc.roomy)
			if err != nil || res.Limit != "" {
				t.Errorf("control: %v %q %s", err, res.Limit, res.Stderr)
			}
		})
	}
}

// TestExecFileBadWorld: a world file the worker cannot read (malformed, or past the size limit)
// fails as a load, naming the file, with ErrFormat or ErrLimit, and is left as it was.
func TestExecFileBadWorld(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	big := New()
	if err := big.FS.WriteFile("/work/f", bytes.Repeat([]byte("x"), 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	enc, err := big.Encode()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		file []byte
		l    Limits
		want error
	}{
		{"malformed", []byte(`{"format": "forkbomb-world", "version": 1, "nosuch": 1}`), Limits{}, ErrFormat},
		{"not json", []byte("hello\n"), Limits{}, ErrFormat},
		{"too big", enc, Limits{MaxSize: 100}, ErrLimit},
	} {
		file := filepath.Join(dir, tc.name+".world")
		if err := os.WriteFile(file, tc.file, 0o600); err != nil {
			t.Fatal(err)
		}
		res, err := ExecFile(context.Background(), file, "echo x > /work/g", nil, tc.l)
		if !errors.Is(err, tc.want) || !strings.HasPrefix(err.Error(), "load "+file+": ") {
			t.Errorf("%s: %v (%+v), want a load error with %v", tc.name, err, res, tc.want)
		}
		if after, _ := os.ReadFile(file); !bytes.Equal(after, tc.file) {
			t.Errorf("%s: the file changed", tc.name)
		}
	}
}
