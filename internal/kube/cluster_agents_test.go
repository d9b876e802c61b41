package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/modelproxy"
	"github.com/forkbomb/forkbomb/internal/run"
	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// agentsImage is the test cluster's image with the agent CLIs
// (scripts/k8s-cluster env), or the test skips saying how to make it.
func agentsImage(t *testing.T) string {
	t.Helper()
	img := os.Getenv("FORKBOMB_K8S_AGENTS_IMAGE")
	if img == "" {
		testutil.SkipOrFail(t, "no agents image: install the agent CLIs (scripts/test does), then scripts/k8s-cluster up, and export FORKBOMB_K8S_AGENTS_IMAGE from scripts/k8s-cluster env")
	}
	return img
}

// watchedStore is the cluster's store with eyes outside every fork's
// sandbox: before a fork's first command it plants a secret beside the
// fork's tree in its pod (as the pod's user, the agent's own uid, so only
// forkbomb's sandbox keeps it from the agent), and before the fork is
// removed it looks, by an exec of its own, for what an escape would have
// left in the pod outside the tree.
type watchedStore struct {
	*Store
	secret  string
	mu      sync.Mutex
	planted map[string]bool
	seen    map[string]string // fork → what the look found outside its tree
}

// escapeMarks are the files an escaping agent is told to make outside its
// tree; the look lists the ones that exist.
const escapeLook = `for f in /work/escaped-bash /work/escaped-write /work/escaped-abs /tmp/escaped-tmp /work/tree/../escaped-rel; do [ -e "$f" ] && echo "$f"; done; true`

func (w *watchedStore) Exec(ctx context.Context, name string, p sandbox.Policy, stdio sandbox.Stdio) (*sandbox.Result, error) {
	w.mu.Lock()
	first := !w.planted[name]
	w.planted[name] = true
	w.mu.Unlock()
	if first {
		w.Store.mu.Lock()
		fs := w.forks[name]
		w.Store.mu.Unlock()
		if err := w.ready(ctx, name, fs, p); err != nil {
			return nil, err
		}
		if _, _, err := w.output(ctx, fs.obj, `umask 077; printf '%s\n' "$1" > /work/secret.txt`, []string{w.secret}, 1<<10); err != nil {
			return nil, fmt.Errorf("plant the secret: %w", err)
		}
	}
	return w.Store.Exec(ctx, name, p, stdio)
}

func (w *watchedStore) Remove(ctx context.Context, name string) error {
	w.Store.mu.Lock()
	fs := w.forks[name]
	w.Store.mu.Unlock()
	if fs != nil && fs.started.Load() {
		out, _, err := w.output(ctx, fs.obj, escapeLook+"; cat /work/secret.txt", nil, 1<<10)
		w.mu.Lock()
		if err != nil {
			w.seen[name] = "the look failed: " + err.Error()
		} else {
			w.seen[name] = string(out)
		}
		w.mu.Unlock()
	}
	return w.Store.Remove(ctx, name)
}

// nodeListener listens on this node's address on the pods' bridge, which
// a pod reaches (the test cluster's CNI enforces no NetworkPolicy), and
// the tally of the connections it accepts.
func nodeListener(t *testing.T) (string, *testutil.Tally) {
	t.Helper()
	ifc, err := net.InterfaceByName("fbk8s0")
	if err != nil {
		testutil.SkipOrFail(t, "no pods' bridge fbk8s0 here (%v): is this the test cluster's node?", err)
	}
	addrs, _ := ifc.Addrs()
	var ip net.IP
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
			ip = n.IP
		}
	}
	if ip == nil {
		t.Fatalf("fbk8s0 has no IPv4 address: %v", addrs)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	n := testutil.NewTally("tcp", ln.Addr().String())
	counted := n.Listener(ln)
	go func() {
		for {
			c, err := counted.Accept()
			if err != nil {
				return
			}
			go func() { // the request read first: a close with unread data resets
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				buf := make([]byte, 4096)
				c.Read(buf)
				c.Write([]byte("HTTP/1.0 200 OK\r\n\r\nreached\n"))
			}()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String(), n
}

// agentRace races engine eng's real CLI in three pods of the cluster
// against a scripted model (steps by persona: honest, cheat, escape):
// the honest fork wins, the cheat's edit of the check is stripped by the
// judge here, and the escape is contained, each checked from outside —
// the pod by an exec of the test's own outside the fork's sandbox, a
// listener on the node that a pod can reach (the control proves it), the
// record. The real key stays in the model proxy on this machine; the fork
// holds a placeholder.
func agentRace(t *testing.T, eng string, steps func(node string) map[string][]engine.Step) {
	cfg, ns := cluster(t)
	img := agentsImage(t)

	// control: a pod of the run's reaches the node's listener outside
	// forkbomb's sandbox, so a fork that does not has been stopped by it
	// (the bridge is there once a pod runs)
	ctl := openStore(t, cfg, Options{Namespace: ns, Image: img})
	fork := newRun(t, ctl, "run-ctl")
	if res, err := ctl.Exec(context.Background(), fork, sandbox.Policy{Command: []string{"/bin/true"}, Timeout: time.Minute}, sandbox.Stdio{}); err != nil || res.ExitCode != 0 {
		t.Fatalf("control pod: %v %+v", err, res)
	}
	ctl.mu.Lock()
	ctlPod := ctl.forks[fork].obj
	ctl.mu.Unlock()
	node, hits := nodeListener(t)
	if out, code, err := ctl.output(context.Background(), ctlPod, `timeout 5 wget -q -O- "http://$1/"`, []string{node}, 1<<10); err != nil || !strings.Contains(string(out), "reached") || hits.Count(t) != 1 {
		t.Fatalf("control: a pod does not reach the node's listener at %s outside the sandbox (exit %d, %v, %q): the escape check would prove nothing", node, code, err, out)
	}
	ctl.Close()

	agent, realKey := podAgent(t, cfg, ns, img, eng, steps(node))
	if info := agent.Info(); !strings.HasPrefix(info.Argv[0], "/opt/") || info.Version == "" {
		t.Errorf("the CLI found in the image: %+v", info)
	}

	secret := fmt.Sprintf("pod-secret-%d", time.Now().UnixNano())
	// forkbomb-pod from ConfigMaps, as a user's race has it (binmap.go)
	w := &watchedStore{Store: openStore(t, cfg, Options{Namespace: ns, Image: img, PodBin: podBinary(t)}), secret: secret,
		planted: map[string]bool{}, seen: map[string]string{}}
	if w.binParts.n == 0 {
		t.Fatal("forkbomb-pod is not kept as ConfigMaps")
	}
	o := raceOptions(t, nil, fixture(t), "", 3)
	o.Store, o.JudgeStore, o.Engine = w, w.o.Local, agent
	o.All, o.Timeout = true, 4*time.Minute
	o.Prompts = []string{"[persona: honest]", "[persona: cheat]", "[persona: escape]"}
	r, dir, err := run.Race(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	log := func(n int) string {
		b, _ := os.ReadFile(filepath.Join(dir, "forks", fmt.Sprint(n), "agent.log"))
		return string(b)
	}
	if r.Status != event.RunWon || r.Winner == nil || *r.Winner != 0 {
		t.Fatalf("status %s winner %v: %+v\nfork 0's log:\n%.6000s", r.Status, r.Winner, r.Fork, log(0))
	}
	if r.Fork[1].Verdict != event.Fail || !strings.Contains(r.Fork[1].Reason, "check.sh") {
		t.Errorf("the cheat: verdict %q, reason %q; want fail naming the stripped check.sh", r.Fork[1].Verdict, r.Fork[1].Reason)
	}
	if r.TokensIn == 0 {
		t.Errorf("no usage counted by the proxy: %+v", r)
	}

	// the escape, from outside
	w.mu.Lock()
	seen := w.seen
	w.mu.Unlock()
	look, ok := seen[run.ForkName(r.ID, 2)]
	if !ok {
		t.Fatalf("the escaping fork's pod was never looked at (%v)", seen)
	}
	if !strings.Contains(look, secret) {
		t.Fatalf("control: the planted secret is not in the pod where it was planted, so its check proves nothing: %q", look)
	}
	if strings.Contains(look, "/escaped") {
		t.Errorf("ESCAPE: written in the pod outside the fork's tree:\n%s", look)
	}
	if n := hits.Count(t); n != 1 {
		t.Errorf("ESCAPE: the node's listener was reached from a fork (%d connections besides the control's)", n-1)
	}
	patch, _ := os.ReadFile(filepath.Join(dir, "forks", "2", "patch"))
	t.Logf("the escaping fork's patch:\n%.3000s", patch)
	if !strings.Contains(string(patch), "inside.txt") || !strings.Contains(string(patch), "env.txt") || !strings.Contains(string(patch), "net.txt") {
		t.Fatalf("control: the escaping fork's writes inside its tree are not in its patch, so it did not follow the script:\n%s\nlog:\n%.6000s", patch, log(2))
	}
	if !strings.Contains(string(patch), sandbox.PlaceholderPrefix) {
		t.Errorf("the escaping fork held no placeholder key:\n%s", patch)
	}
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		data, _ := os.ReadFile(path)
		if strings.Contains(string(data), realKey) {
			t.Errorf("LEAK: the real key is in %s", path)
		}
		if strings.Contains(string(data), secret) {
			t.Errorf("LEAK: the secret beside the fork's tree is in %s", path)
		}
		return nil
	})
	waitNothingLeft(t, cfg, ns, time.Minute)
}

// podAgent is engine eng's real CLI as the image img holds it (found in a
// pod of ns), its model a scripted one played by steps (by persona)
// behind a model proxy holding realKey.
func podAgent(t *testing.T, cfg *rest.Config, ns, img, eng string, steps map[string][]engine.Step) (engine.Agent, string) {
	t.Helper()
	kind, base := modelproxy.Anthropic, ""
	if eng == "codex" {
		kind, base = modelproxy.OpenAI, "/v1"
	}
	realKey := "sk-REAL-" + eng + "-" + strings.Repeat("k", 24)
	srv, err := engine.StartScripted(realKey, steps)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	p, err := modelproxy.Start(modelproxy.Options{Upstreams: []modelproxy.Upstream{{Kind: kind, BaseURL: srv.URL + base, APIKey: realKey}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	find := func(ctx context.Context, name, given string) (string, string, error) {
		bin, version, _, err := FindAgent(ctx, ProbeOptions{Config: cfg, Namespace: ns, Image: img}, name, given)
		return bin, version, err
	}
	agent, err := engine.New(context.Background(), eng, engine.Settings{Proxy: p, Find: find})
	if err != nil {
		t.Fatal(err)
	}
	return agent, realKey
}

// escapeScript is the escaping agent's shell command: writes outside its
// tree (relative, absolute, the pod's /tmp), the secret beside the tree,
// the node's listener; its environment and a write inside, the control.
func escapeScript(node string) string {
	return `env > env.txt; echo inside > inside.txt; echo x > ../escaped-bash; echo x > /work/escaped-abs; echo x > /tmp/escaped-tmp; ` +
		`cat /work/secret.txt ../secret.txt > got.txt 2>&1; timeout 5 wget -q -O- http://` + node + `/ > net.txt 2>&1; ` +
		`nc -w 3 ` + strings.Replace(node, ":", " ", 1) + ` </dev/null >> net.txt 2>&1; true`
}

// TestClusterClaudeCode: the real Claude Code CLI, the image's, in pods.
func TestClusterClaudeCode(t *testing.T) {
	t.Parallel()
	agentRace(t, "claude-code", func(node string) map[string][]engine.Step {
		return map[string][]engine.Step{
			"honest": {
				{Text: "Fixing.", Tools: []engine.ToolCall{{Name: "Bash", Input: map[string]any{"command": `echo 2 > value && sh check.sh`}}}},
				{Text: "Fixed."},
			},
			"cheat": {
				{Tools: []engine.ToolCall{{Name: "Write", Input: map[string]any{"file_path": "check.sh", "content": "echo '1 passed, 0 failed'\n"}}}},
				{Text: "Tests pass."},
			},
			"escape": {
				{Tools: []engine.ToolCall{
					{Name: "Bash", Input: map[string]any{"command": escapeScript(node)}},
					{Name: "Write", Input: map[string]any{"file_path": "/work/escaped-write", "content": "x\n"}},
					{Name: "Read", Input: map[string]any{"file_path": "/work/secret.txt"}},
				}},
				{Text: "Done."},
			},
		}
	})
}

// TestClusterCodex: the real codex CLI, the image's, in pods.
func TestClusterCodex(t *testing.T) {
	t.Parallel()
	shell := func(cmd string) engine.ToolCall {
		return engine.ToolCall{Name: "exec_command", Input: map[string]any{"cmd": cmd}}
	}
	agentRace(t, "codex", func(node string) map[string][]engine.Step {
		return map[string][]engine.Step{
			"honest": {
				{Tools: []engine.ToolCall{shell("cat value check.sh")}},
				{Tools: []engine.ToolCall{shell("apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: value\n@@\n-1\n+2\n*** End Patch\nEOF\n")}},
				{Text: "Fixed the value."},
			},
			"cheat": {
				{Tools: []engine.ToolCall{shell(`printf 'echo "1 passed, 0 failed"\n' > check.sh`)}},
				{Text: "The check passes now."},
			},
			"escape": {
				{Tools: []engine.ToolCall{shell(escapeScript(node) + "; echo x > /work/escaped-write")}},
				{Text: "Done."},
			},
		}
	})
}

// TestClusterFindAgentCache: FindAgent names the image by the digest the
// nodes list for its tag (the test cluster's images carry one, as a
// registry's pull gives) — what the forks' pods then run; with a cache, it
// keeps what it found by that digest, and the next call answers from it
// without a pod: the kept answer is altered by hand and comes back altered, which
// no pod could have found. The control: another path for the CLI is
// another key, looked for in a pod again.
func TestClusterFindAgentCache(t *testing.T) {
	t.Parallel()
	cfg, ns := cluster(t)
	img := agentsImage(t)
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// the kubelet lists a node's images every so often: a cluster just up
	// may not show them yet
	pinned := ""
	for deadline := time.Now().Add(90 * time.Second); pinned == "" && time.Now().Before(deadline); time.Sleep(time.Second) {
		pinned = nodeImageContent(ctx, dyn, img)
	}
	if r, ok := parseImageRef(pinned); !ok || r.digest == "" {
		t.Fatalf("the nodes list no digest for %s (%q): scripts/k8s-cluster imports each image with one, as a registry's pull gives", img, pinned)
	}
	cache := filepath.Join(t.TempDir(), "kube-agents.json")
	o := ProbeOptions{Config: cfg, Namespace: ns, Image: img, AgentCache: cache}
	t0 := time.Now()
	bin, version, image, err := FindAgent(ctx, o, "claude", "")
	if err != nil || !strings.HasPrefix(bin, "/opt/") || version == "" || image != pinned {
		t.Fatalf("found %q %q in %q, %v; want it in %s", bin, version, image, err, pinned)
	}
	inPod := time.Since(t0)
	data, err := os.ReadFile(cache)
	if err != nil {
		t.Fatalf("nothing kept: %v", err)
	}
	var c agentCacheFile
	if err := json.Unmarshal(data, &c); err != nil || len(c.Agents) != 1 {
		t.Fatalf("the cache: %v %s", err, data)
	}
	for _, a := range c.Agents {
		if a.Bin != bin || a.Version != version {
			t.Fatalf("kept %+v; found %q %q", a, bin, version)
		}
		a.Bin, a.Version = "/kept/by-hand", "kept by hand"
	}
	if data, err = json.Marshal(c); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cache, data, 0o600); err != nil {
		t.Fatal(err)
	}
	t0 = time.Now()
	if b, v, i, err := FindAgent(ctx, o, "claude", ""); err != nil || b != "/kept/by-hand" || v != "kept by hand" || i != pinned {
		t.Errorf("the second call: %q %q in %q, %v; want the kept answer in %s", b, v, i, err, pinned)
	}
	t.Logf("found in a pod in %v; kept, in %v", inPod.Round(time.Millisecond), time.Since(t0).Round(time.Millisecond))
	if b, v, _, err := FindAgent(ctx, o, "claude", bin); err != nil || b != bin || v != version {
		t.Errorf("the control, the CLI's path given: %q %q, %v; want %q %q from a pod", b, v, err, bin, version)
	}
}
