package record

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/forkbomb/forkbomb/internal/event"
)

// helperEnv makes the test binary a recorder that holds a run open
// (TestHelperRecorder) instead of running the tests.
const helperEnv = "FORKBOMB_TEST_RECORDER_RUNS"

// TestHelperRecorder is not a test: run with helperEnv set, it creates a
// run, says "ready" on stdout once the run is recorded, and waits on stdin
// for ever (until killed).
func TestHelperRecorder(t *testing.T) {
	runs := os.Getenv(helperEnv)
	if runs == "" {
		t.Skip("helper process only")
	}
	rec, err := create(runs, Run{ID: "live"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	os.Stdout.WriteString("ready\n")
	bufio.NewReader(os.Stdin).ReadString('\n')
	os.Exit(0)
}

// TestLiveness runs a recorder in another process: while it records, the
// run reads as running; killed with SIGKILL (nothing of it gets to write
// an ending), the run reads as interrupted — even when run.json's pid is
// then made to name a live process (a pid reused, or read in another pid
// namespace), which kill(pid, 0) would have taken for the run.
func TestLiveness(t *testing.T) {
	t.Parallel()
	runs := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperRecorder$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+runs)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("recorder did not get ready: %q, %v", line, err)
	}

	r, err := Load(runs, "live")
	if err != nil || r.Status != event.RunRunning {
		t.Fatalf("a run being recorded: %+v, %v; want running", r, err)
	}
	if l := RunLiveness(filepath.Join(runs, "live")); l != Alive {
		t.Errorf("liveness of a run being recorded = %v, want alive", l)
	}

	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if r, err = Load(runs, "live"); err != nil || r.Status != event.RunInterrupted {
		t.Fatalf("a killed run: %+v, %v; want interrupted", r, err)
	}

	// The pid in run.json no longer decides: point it at this live
	// process, and the run still reads as interrupted.
	dir := filepath.Join(runs, "live")
	setPID(t, dir, os.Getpid())
	if r, err = Load(runs, "live"); err != nil || r.Status != event.RunInterrupted {
		t.Errorf("a killed run whose pid is reused: %+v, %v; want interrupted", r, err)
	}
	// Positive control: without its lock (a record from before it), the
	// same run.json falls back to the pid, and the live pid reads running.
	if err := os.Remove(filepath.Join(dir, LockFile)); err != nil {
		t.Fatal(err)
	}
	if r, err = Load(runs, "live"); err != nil || r.Status != event.RunRunning {
		t.Errorf("a lockless record with a live pid: %+v, %v; want running", r, err)
	}
}

func setPID(t *testing.T, dir string, pid int) {
	t.Helper()
	path := filepath.Join(dir, "run.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r Run
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	r.PID = pid
	if data, err = json.Marshal(r); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
