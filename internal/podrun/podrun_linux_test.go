package podrun

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

func TestMain(m *testing.M) {
	if sandbox.IsInit() { // the runner's sandbox re-executes this binary as its init
		sandbox.InitMain()
	}
	os.Exit(m.Run())
}

// runner runs the runner in this process with spec and command.
func runner(t *testing.T, spec Spec, command ...string) (int, string) {
	t.Helper()
	argv, err := Argv("/bin/forkbomb", spec, command...)
	if err != nil {
		t.Fatal(err)
	}
	if argv[1] != arg {
		t.Fatalf("argv %q", argv)
	}
	var out bytes.Buffer
	code := run(argv[2:], strings.NewReader(""), &out, &out)
	return code, out.String()
}

// TestRunnerConfines: the command runs inside forkbomb's sandbox — its
// HOME the sandbox's own, its writes kept to the workdir, no socket on the
// Landlock backend offline — with the spec's variables and placeholders;
// its status is its own, a timeout's 124, and a spec the sandbox refuses
// runs nothing (125).
func TestRunnerConfines(t *testing.T) {
	t.Parallel()
	rep, err := sandbox.Probe(t.Context())
	if err != nil || (rep.Mode != sandbox.ModeNamespaces && rep.Mode != sandbox.ModeLandlock) {
		testutil.SkipOrFail(t, "no sandbox backend here: %v %v", err, rep)
	}
	wd := t.TempDir()
	outside := t.TempDir()
	ph := sandbox.NewPlaceholder()
	code, out := runner(t, Spec{Workdir: wd, Mode: sandbox.ModeLandlock, Network: sandbox.NetworkNone,
		SetEnv: []string{"FORK=3"}, Placeholders: map[string]string{"ANTHROPIC_API_KEY": ph}},
		"/bin/sh", "-c", `echo "home=$HOME fork=$FORK key=$ANTHROPIC_API_KEY"; echo in > in; echo out > `+outside+`/out || echo refused; exit 7`)
	if code != 7 {
		t.Fatalf("exit %d, want the command's 7:\n%s", code, out)
	}
	if strings.Contains(out, "home="+os.Getenv("HOME")+" ") || !strings.Contains(out, "fork=3 key="+ph) || !strings.Contains(out, "refused") {
		t.Errorf("the command did not run confined with the spec's variables:\n%s", out)
	}
	if _, err := os.Stat(wd + "/in"); err != nil {
		t.Errorf("the workdir's write: %v", err)
	}
	if _, err := os.Stat(outside + "/out"); err == nil {
		t.Errorf("LEAK: the command wrote outside its workdir")
	}
	if code, out := runner(t, Spec{Workdir: wd, Mode: sandbox.ModeLandlock, Timeout: time.Second}, "/bin/sleep", "30"); code != ExitTimeout {
		t.Errorf("a timed-out command: exit %d, want %d:\n%s", code, ExitTimeout, out)
	}
	if code, out := runner(t, Spec{Workdir: wd, SetEnv: []string{"ANTHROPIC_API_KEY=sk-ant-real"}}, "/bin/true"); code != ExitSetup || !strings.Contains(out, "credential") {
		t.Errorf("a key passed as a variable: exit %d, want %d (refused):\n%s", code, ExitSetup, out)
	}
	if code := run([]string{"{not json"}, strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}); code != ExitSetup {
		t.Errorf("a bad spec: exit %d, want %d", code, ExitSetup)
	}
}

// TestRunnerProbe: a probe spec prints the sandbox's probe report.
func TestRunnerProbe(t *testing.T) {
	t.Parallel()
	code, out := runner(t, Spec{Probe: true})
	var rep sandbox.ProbeReport
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || rep.Mode == "" || len(rep.Layers) == 0 {
		t.Fatalf("probe: exit %d:\n%s", code, out)
	}
}

// TestRunnerHidesAroundTree: with the pod's folder around the tree in
// Hide, as every command in a pod has it, a file beside the tree is not
// readable while the tree is; the control, without Hide, reads it.
func TestRunnerHidesAroundTree(t *testing.T) {
	t.Parallel()
	rep, err := sandbox.Probe(t.Context())
	if err != nil || (rep.Mode != sandbox.ModeNamespaces && rep.Mode != sandbox.ModeLandlock) {
		testutil.SkipOrFail(t, "no sandbox backend here: %v %v", err, rep)
	}
	modes := []sandbox.Mode{sandbox.ModeLandlock}
	if rep.Mode == sandbox.ModeNamespaces {
		modes = append(modes, sandbox.ModeNamespaces)
	}
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			base, unmasked := testutil.OutsideDir(t) // the sandbox hides /tmp anyway
			if !unmasked {
				testutil.SkipOrFail(t, "no folder outside those the sandbox masks anyway (FORKBOMB_TEST_OUTSIDE)")
			}
			tree := base + "/tree"
			os.Mkdir(tree, 0o755)
			os.WriteFile(tree+"/mine.txt", []byte("tree-file\n"), 0o644)
			os.WriteFile(base+"/secret.txt", []byte("beside-the-tree\n"), 0o644)
			script := `cat mine.txt; cat ../secret.txt; cat ` + base + `/secret.txt; true`
			_, out := runner(t, Spec{Workdir: tree, Mode: mode, Hide: []string{base}}, "/bin/sh", "-c", script)
			if !strings.Contains(out, "tree-file") {
				t.Fatalf("the tree is not readable with its folder hidden:\n%s", out)
			}
			if strings.Contains(out, "beside-the-tree") {
				t.Errorf("LEAK: a file beside the tree was read:\n%s", out)
			}
			if _, out := runner(t, Spec{Workdir: tree, Mode: mode}, "/bin/sh", "-c", script); !strings.Contains(out, "beside-the-tree") {
				t.Errorf("control: without Hide the file beside the tree is not read, so the check proves nothing:\n%s", out)
			}
		})
	}
}
