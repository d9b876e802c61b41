package main

import (
	"bufio"
	"bytes"
	"debug/buildinfo"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/testutil"
)

// binEnv names a folder holding forkbomb and forkbomb-full built from this
// tree (scripts/test builds them once for every run); without it the test
// builds them itself, which needs the module's source and go.
const binEnv = "FORKBOMB_TEST_BIN"

// heavy are the modules the core binary must not link: their package
// initialisers would run at every start of forkbomb. (The world's
// interpreter — mvdan.cc/sh, gojq, GoAWK — is the core's: its verbs are.)
var heavy = []string{"k8s.io/", "modernc.org/", "github.com/modelcontextprotocol/", "github.com/jackc/pgx"}

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// binaries are the two real binaries, built once for the whole test binary.
func binaries(t *testing.T) (core, full string) {
	t.Helper()
	buildOnce.Do(func() {
		if binDir = os.Getenv(binEnv); binDir != "" {
			return
		}
		if _, err := exec.LookPath("go"); err != nil {
			buildErr = err
			return
		}
		gomod, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil || strings.TrimSpace(string(gomod)) == "" || strings.TrimSpace(string(gomod)) == os.DevNull {
			buildErr = errors.New("not inside the module's source")
			return
		}
		if binDir, buildErr = os.MkdirTemp("", "forkbomb-split-"); buildErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", binDir+"/", "./cmd/...")
		cmd.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = errors.New("go build: " + err.Error() + "\n" + string(out))
		}
	})
	if buildErr != nil {
		testutil.SkipOrFail(t, "cannot build forkbomb and forkbomb-full (%v); set %s to a folder holding both", buildErr, binEnv)
	}
	return filepath.Join(binDir, "forkbomb"), filepath.Join(binDir, "forkbomb-full")
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" && os.Getenv(binEnv) == "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// TestCoreLinksNoHeavyModule reads the binaries' build information: the
// core links none of the heavy modules, and the full build links each of
// them (the positive control: the check would see one).
func TestCoreLinksNoHeavyModule(t *testing.T) {
	core, full := binaries(t)
	for _, tc := range []struct {
		bin  string
		want bool
	}{{core, false}, {full, true}} {
		t.Run(filepath.Base(tc.bin), func(t *testing.T) {
			bi, err := buildinfo.ReadFile(tc.bin)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range heavy {
				linked := false
				for _, d := range bi.Deps {
					if strings.HasPrefix(d.Path, h) {
						linked = true
					}
				}
				if linked != tc.want {
					t.Errorf("%s links %s: %v, want %v", filepath.Base(tc.bin), h, linked, tc.want)
				}
			}
		})
	}
}

// fb runs bin with args in dir and returns its output and exit status.
func fb(t *testing.T, bin, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := startBin(t, func() *exec.Cmd {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "FORKBOMB_HOME="+filepath.Join(dir, "state"), "KUBECONFIG="+filepath.Join(dir, "no-kubeconfig"))
		out.Reset()
		errb.Reset()
		cmd.Stdout, cmd.Stderr = &out, &errb
		cmd.WaitDelay = time.Minute // bounds a wait on a stray holder of the pipes
		return cmd
	})
	err := cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("%v: %v", args, err)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

// TestCoreHandsOn: what the core does not link runs in forkbomb-full, with
// its output and exit status; the verbs the core has answer the same.
func TestCoreHandsOn(t *testing.T) {
	core, full := binaries(t)
	dir := t.TempDir()
	if _, e, code := fb(t, core, dir, "world", "init", "w.world"); code != 0 {
		t.Fatalf("world init: %d %s", code, e)
	}
	for _, tc := range []struct {
		name     string
		args     []string
		code     int
		out, err string // in stdout, in stderr
	}{
		{"world exec passes the script's status", []string{"world", "exec", "w.world", "echo hi; exit 7"}, 7, "hi\n", ""},
		{"world mcp usage error", []string{"world", "mcp"}, 2, "", "mcp takes 1 argument"},
		{"world --help", []string{"world", "--help"}, 0, "A world is one file", ""},
		{"help world", []string{"help", "world"}, 0, "A world is one file", ""},
		{"gateway usage error", []string{"gateway", "grant", "ws", "0", "--reason", "x"}, 2, "", "a positive amount"},
		{"run --backend kubernetes", []string{"run", "--repo", dir, "--backend", "kubernetes", "--engine", "command", "--agent", "true", "--test", "true", "x"}, 2, "", "--backend kubernetes: kubeconfig"},
		{"sandbox --probe --backend kubernetes", []string{"sandbox", "--probe", "--backend=kubernetes"}, 125, "", "probe: kubeconfig"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := fb(t, core, dir, tc.args...)
			if code != tc.code || !strings.Contains(out, tc.out) || !strings.Contains(errOut, tc.err) {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, out, errOut)
			}
		})
	}
	t.Run("help is the same", func(t *testing.T) {
		a, _, ca := fb(t, core, dir, "--help")
		b, _, cb := fb(t, full, dir, "--help")
		if a != b || ca != 0 || cb != 0 {
			t.Errorf("forkbomb --help (%d):\n%s\nforkbomb-full --help (%d):\n%s", ca, a, cb, b)
		}
	})
}

// TestCoreExecsFull: the command runs in the process the core started
// (execve, not a child): its /proc/PID/exe is forkbomb-full while it runs,
// and a SIGTERM sent to that pid is the gateway's to handle: it shuts down
// and exits 0, where a process without its handler would die of the signal.
func TestCoreExecsFull(t *testing.T) {
	core, full := binaries(t)
	dir := t.TempDir()
	cmd := exec.Command(core, "gateway", "serve", "--listen", "127.0.0.1:0", "--db", filepath.Join(dir, "g.db"),
		"--secret-file", filepath.Join(dir, "secret"), "--anthropic-url", "", "--openai-url", "")
	cmd.Env = append(os.Environ(), "FORKBOMB_HOME="+filepath.Join(dir, "state"))
	// Its own process group, killed whole at the end: whatever the
	// hand-off did, nothing it started outlives the test.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 10 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errf, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer errf.Close()
	cmd.Stderr = errf // a file: no copying goroutine to wait for or race with
	stderr := func() string { b, _ := os.ReadFile(errf.Name()); return string(b) }
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	kill := func() { syscall.Kill(-pgid, syscall.SIGKILL) }
	defer func() { kill(); <-done }()
	// Bounded: a gateway that never says it listens is killed, and the
	// read ends with the pipe.
	stop := time.AfterFunc(time.Minute, kill)
	defer stop.Stop()
	line, err := bufio.NewReader(io.LimitReader(stdout, 4096)).ReadString('\n')
	if !strings.HasPrefix(line, "listening on http://127.0.0.1:") {
		t.Fatalf("gateway serve said %q (%v); stderr: %s", line, err, stderr())
	}
	exe, err := os.Readlink("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/exe")
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := filepath.EvalSymlinks(full); exe != want {
		t.Errorf("pid %d runs %s, want %s", cmd.Process.Pid, exe, want)
	}
	go io.Copy(io.Discard, stdout)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("still running a minute after SIGTERM; stderr: %s", stderr())
	}
	if ps := cmd.ProcessState; !ps.Exited() || ps.ExitCode() != 0 {
		t.Errorf("after SIGTERM: %v, want the gateway's own exit 0; stderr: %s", ps, stderr())
	}
}

// TestCoreWithoutFull: the core alone, or beside a forkbomb-full of
// another build, refuses with a message naming the command and how to
// build both, with the status the verb gives when it cannot run; it
// still runs its own verbs (the control).
func TestCoreWithoutFull(t *testing.T) {
	core, full := binaries(t)
	for _, tc := range []struct {
		name    string
		sibling string // copied in as forkbomb-full; "" none
		mode    os.FileMode
		link    bool // forkbomb-full is a symbolic link to sibling instead
		why     string
	}{
		{"missing", "", 0, false, "is not there"},
		{"not a Go build", "/bin/true", 0o755, false, "is not a Go build of forkbomb"},
		{"another program", core, 0o755, false, "is from another build"},
		// The right build, in a file others could change, or reached
		// through a link: refused as the sandbox init would be
		// (TestCoreHandsOn is the control: the same build, a plain file).
		{"writable by others", full, 0o777, false, "writable by group or others"},
		{"a symbolic link", full, 0, true, "symbolic link"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			lone := filepath.Join(dir, "forkbomb")
			copyFile(t, core, lone)
			sib := filepath.Join(dir, "forkbomb-full")
			switch {
			case tc.link:
				if err := os.Symlink(tc.sibling, sib); err != nil {
					t.Fatal(err)
				}
			case tc.sibling != "":
				copyFile(t, tc.sibling, sib)
				if err := os.Chmod(sib, tc.mode); err != nil { // past the umask
					t.Fatal(err)
				}
			}
			for _, c := range []struct {
				args []string
				what string
				code int
			}{
				{[]string{"world", "mcp", "w.world"}, "world mcp", 1},
				{[]string{"gateway", "--help"}, "gateway", 1},
				{[]string{"run", "--backend", "kubernetes", "x"}, "--backend kubernetes", 2},
				{[]string{"sandbox", "--probe", "--backend", "kubernetes"}, "--backend kubernetes", 125},
			} {
				_, errOut, code := fb(t, lone, dir, c.args...)
				for _, want := range []string{c.what + " needs forkbomb-full", tc.why, "CGO_ENABLED=0 go build -o bin/ ./cmd/..."} {
					if !strings.Contains(errOut, want) {
						t.Errorf("%v: stderr lacks %q:\n%s", c.args, want, errOut)
					}
				}
				if code != c.code {
					t.Errorf("%v: exit %d, want %d", c.args, code, c.code)
				}
			}
			if out, errOut, code := fb(t, lone, dir, "sandbox", "--help"); code != 0 || !strings.Contains(out, "Run COMMAND") {
				t.Errorf("the core's own verb: exit %d\n%s%s", code, out, errOut)
			}
			if _, errOut, code := fb(t, lone, dir, "world", "init", "w.world"); code != 0 {
				t.Errorf("the core's own world verb: exit %d\n%s", code, errOut)
			}
		})
	}
}

// startBin starts the command mk makes, again while the kernel says its
// file is busy: the tests write the binaries they run from parallel
// subtests, and a child forked by another one holds a write descriptor
// until it executes (ETXTBSY, golang/go#22315).
func startBin(t *testing.T, mk func() *exec.Cmd) *exec.Cmd {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; { // that exec may be late on a loaded machine
		cmd := mk()
		err := cmd.Start()
		if err == nil {
			return cmd
		}
		if !errors.Is(err, syscall.ETXTBSY) || time.Now().After(deadline) {
			t.Fatalf("%v: %v", cmd.Args, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}
