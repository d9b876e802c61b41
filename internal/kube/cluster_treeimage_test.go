package kube

import (
	"bytes"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/testutil"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// imageTar is the forks' image as scripts/k8s-cluster imports it (a
// docker archive), for a test registry to serve.
func imageTar() string {
	if p := os.Getenv("FORKBOMB_K8S_IMAGE_TAR"); p != "" {
		return p
	}
	return "/var/lib/forkbomb-k8s/images/agent-v2.tar"
}

var testReg struct {
	once          sync.Once
	prefix, image string
	err           error
}

// testRegistry serves a registry on this machine's loopback, which the
// test cluster's node (this machine) pulls from over plain HTTP, holding
// the forks' image; it returns the registry's prefix for tree images and
// the forks' image there. One per test process, for its whole life.
func testRegistry(t testing.TB) (prefix, image string) {
	t.Helper()
	testReg.once.Do(func() {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			testReg.err = err
			return
		}
		go http.Serve(l, registry.New(registry.Logger(log.New(io.Discard, "", 0))))
		host := l.Addr().String()
		tag, err := name.NewTag(DefaultImage)
		if err != nil {
			testReg.err = err
			return
		}
		img, err := tarball.ImageFromPath(imageTar(), &tag)
		if err != nil {
			testReg.err = err
			return
		}
		ref, err := name.ParseReference(host + "/forkbomb/agent:v2")
		if err != nil {
			testReg.err = err
			return
		}
		if testReg.err = remote.Write(ref, img); testReg.err == nil {
			testReg.prefix, testReg.image = host+"/forkbomb", ref.String()
		}
	})
	if testReg.err != nil {
		t.Fatalf("a registry of the forks' image (%s): %v", imageTar(), testReg.err)
	}
	return testReg.prefix, testReg.image
}

// TestClusterTreeImage: with a registry, a run's tree reaches the node as
// one image layer and each fork's pod starts from it — forkbomb's binary
// root's there (the image's, never sent: sent, it would be the pod
// user's), the tree the pod's user's and writable, each fork's writes its
// own — a warm pod and a fork's own pod alike; the fork's patch is made
// there as without it, and a second run of the same commit finds the image
// pushed and runs the same one.
func TestClusterTreeImage(t *testing.T) {
	t.Parallel() // a namespace of its own; its waits are the cluster's
	cfg, ns := cluster(t)
	reg, image := testRegistry(t)
	s := openStore(t, cfg, Options{Namespace: ns, Image: image, Registry: reg, Warm: 1})
	ctx := t.Context()
	// a commit of its own: another test's fixture made in the same second
	// is the same commit, whose image this process's registry may hold
	repo := fixture(t)
	must(t, os.WriteFile(filepath.Join(repo, "nonce"), []byte(strconv.FormatInt(time.Now().UnixNano(), 10)), 0o644))
	testutil.Git(t, repo, "add", "nonce")
	testutil.Git(t, repo, "commit", "-qm", "nonce")
	top, base, err := workspace.ResolveBase(ctx, repo, "HEAD")
	must(t, err)
	newRun := func(run string) TreeImage {
		t.Helper()
		_, err := s.New(ctx, run, workspace.NewOptions{Repo: top, Rev: base})
		must(t, err)
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.runs[run].image
	}
	first := newRun("tree1")
	if !first.Pushed || !strings.HasPrefix(first.Ref, reg+"/"+treeRepo+"@sha256:") {
		t.Fatalf("the run's tree image: %+v", first)
	}
	// the warm pod is offered before it is made: a fork's first command
	// that comes before it runs waits for it, never starts a pod beside it
	s.mu.Lock()
	offered := len(s.runs["tree1"].pool)
	s.mu.Unlock()
	if offered != 1 {
		t.Errorf("%d warm pods offered when New returned; want 1", offered)
	}
	forks := []string{"tree1-a", "tree1-b"} // a claims the warm pod, b starts its own
	for i, f := range forks {
		if _, err := s.Fork(ctx, "tree1", f); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		script := `cat value && echo ` + f + ` > value && echo new > added`
		res, err := s.Exec(ctx, f, sandbox.Policy{Command: []string{"/bin/sh", "-c", script}, Timeout: time.Minute},
			sandbox.Stdio{Stdout: &out, Stderr: &out})
		if err != nil || res.ExitCode != 0 || out.String() != "1\n" {
			t.Fatalf("%s: %v %+v: %q (want the base's value: no other fork's write)", f, err, res, out.String())
		}
		s.mu.Lock()
		obj := s.forks[f].obj
		s.mu.Unlock()
		if warm := strings.HasSuffix(obj, "-w0"); warm != (i == 0) {
			t.Errorf("%s runs in %s: warm %v", f, obj, warm)
		}
		p, err := s.dyn.Resource(podGVR).Namespace(ns).Get(ctx, obj, metav1.GetOptions{})
		must(t, err)
		cs := p.Object["spec"].(map[string]any)["containers"].([]any)
		if img := cs[0].(map[string]any)["image"]; img != first.Ref {
			t.Errorf("%s: image %v, want %s", obj, img, first.Ref)
		}
		// from outside forkbomb's sandbox in the pod: who owns what
		var st, serr bytes.Buffer
		code, err := s.stream(ctx, obj, []string{"stat", "-c", "%n %u %a", "/work", podBin, podRoot, podRoot + "/value"}, nil, &st, &serr)
		want := "/work 0 755\n" + podBin + " 0 755\n" + podRoot + " 65534 755\n" + podRoot + "/value 65534 644\n"
		if err != nil || code != 0 || st.String() != want {
			t.Errorf("%s: stat: %d %v %q %s; want %q", obj, code, err, st.String(), serr.String(), want)
		}
		d, err := s.Diff(ctx, f, false)
		must(t, err)
		for _, w := range []string{"-1\n+" + f + "\n", "+++ b/added"} {
			if !strings.Contains(string(d.Patch), w) {
				t.Errorf("%s: patch lacks %q:\n%s", f, w, d.Patch)
			}
		}
	}
	if again := newRun("tree2"); again.Pushed || again.Ref != first.Ref {
		t.Errorf("a second run of the commit: %+v; want %s found, not pushed", again, first.Ref)
	}
	if _, err := s.Fork(ctx, "tree2", "tree2-a"); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	res, err := s.Exec(ctx, "tree2-a", sandbox.Policy{Command: []string{"cat", "value"}, Timeout: time.Minute}, sandbox.Stdio{Stdout: &out})
	if err != nil || res.ExitCode != 0 || out.String() != "1\n" {
		t.Fatalf("the second run's fork: %v %+v %q", err, res, out.String())
	}
	s.Close()
	waitNothingLeft(t, cfg, ns, 2*time.Minute)
}
