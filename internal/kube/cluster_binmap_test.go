package kube

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

var (
	podBinOnce sync.Once
	podBinDir  string // removed by TestMain
	podBinPath string
	podBinErr  error
)

// podBinary is forkbomb-pod as a user builds it (CGO_ENABLED=0): the one
// scripts/test built in FORKBOMB_TEST_BIN, else built here once. This
// package's test binary serves in pods too, but is over binInPodMax, so
// its pods are sent it by the stream.
func podBinary(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("FORKBOMB_TEST_BIN"); d != "" {
		if p := filepath.Join(d, "forkbomb-pod"); fileExists(p) {
			return p
		}
	}
	podBinOnce.Do(func() {
		if podBinDir, podBinErr = os.MkdirTemp("", "forkbomb-pod-"); podBinErr != nil {
			return
		}
		podBinPath = filepath.Join(podBinDir, "forkbomb-pod")
		build := exec.Command("go", "build", "-o", podBinPath, "github.com/forkbomb/forkbomb/cmd/forkbomb-pod")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			podBinErr = &buildError{err, out}
		}
	})
	if podBinErr != nil {
		t.Fatalf("build forkbomb-pod: %v", podBinErr)
	}
	return podBinPath
}

type buildError struct {
	err error
	out []byte
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + string(e.out) }

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// TestClusterBinInPod: with forkbomb-pod (small enough for ConfigMaps),
// every pod gets the binary from its start (binmap.go): a fork's command
// runs, and in its pod — as the pod's user, outside forkbomb's sandbox —
// the binary is the one built, on a read-only mount nothing can write;
// the pod kept for the next run (its spec with the init container) is
// claimed by that run; a kept pod someone wrote to /work of is still
// refused; parts someone made under forkbomb's names with other bytes
// fail the pod's init container, and the fork says so, having run
// nothing.
func TestClusterBinInPod(t *testing.T) {
	t.Parallel() // a namespace of its own; its waits are the cluster's
	cfg, ns := cluster(t)
	ctx := t.Context()
	pb := podBinary(t)
	data, err := os.ReadFile(pb)
	must(t, err)
	h := sha256.Sum256(data)
	sum := hex.EncodeToString(h[:])
	o := Options{Namespace: ns, PodBin: pb, Warm: 1, KeepWarm: 10 * time.Minute}
	repo := fixture(t)
	top, base, err := workspace.ResolveBase(ctx, repo, "HEAD")
	must(t, err)
	race := func(s *Store, run string) string {
		t.Helper()
		return keptRace(t, s, top, base, run, func(f, obj string) {
			// the pod's own view, as its user
			var pout bytes.Buffer
			code, err := s.stream(ctx, obj, []string{"/bin/sh", "-c", `sha256sum </work/.forkbomb/forkbomb | cut -d' ' -f1
if echo x >/work/.forkbomb/forkbomb || touch /work/.forkbomb/x || chmod 777 /work/.forkbomb/forkbomb || rm -f /work/.forkbomb/forkbomb; then echo WRITABLE; fi 2>/dev/null
awk '$5 == "/work/.forkbomb" { print substr($6, 1, 3) }' /proc/self/mountinfo`}, nil, &pout, io.Discard)
			if lines := strings.Fields(pout.String()); err != nil || code != 0 || len(lines) != 2 || lines[0] != sum || lines[1] != "ro," {
				t.Errorf("%s's pod %s: %q (exit %d, %v), want the sum %s and a read-only mount", f, obj, pout.String(), code, err, sum)
			}
			p, err := s.dyn.Resource(podGVR).Namespace(ns).Get(ctx, obj, metav1.GetOptions{})
			must(t, err)
			if inits, _, _ := unstructured.NestedSlice(p.Object, "spec", "initContainers"); len(inits) != 1 {
				t.Errorf("%s's pod %s: init containers %v", f, obj, inits)
			}
		})
	}

	a := openStore(t, cfg, o)
	if a.binParts.n == 0 || a.binParts.sum != sum {
		t.Fatalf("the store keeps no parts of %s: %+v", pb, a.binParts)
	}
	race(a, "bin1")
	kept := keptRunning(t, a)
	b := openStore(t, cfg, o)
	if obj := race(b, "bin2"); obj != kept {
		t.Errorf("the second run's fork ran in %s, want the kept pod %s", obj, kept)
	}
	planted := keptRunning(t, b)
	if code, err := b.stream(ctx, planted, []string{"/bin/sh", "-c", "echo x > /work/planted"}, nil, io.Discard, io.Discard); err != nil || code != 0 {
		t.Fatalf("plant in %s: %d %v", planted, code, err)
	}
	if obj := race(b, "bin3"); obj == planted {
		t.Errorf("the fork ran in %s, where someone had written to /work first", planted)
	}

	// parts under forkbomb's names for another binary, with other bytes
	fake := filepath.Join(t.TempDir(), "forkbomb-pod")
	must(t, os.WriteFile(fake, []byte("#!/bin/sh\ntouch /work/ran\n"), 0o755))
	fh := sha256.Sum256([]byte("#!/bin/sh\ntouch /work/ran\n"))
	fp := binParts{sum: hex.EncodeToString(fh[:]), n: 1}
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata":   map[string]any{"name": fp.name(0), "labels": map[string]any{LabelManaged: Managed, LabelBin: fp.label()}},
		"binaryData": map[string]any{"part": base64.StdEncoding.EncodeToString([]byte("#!/bin/sh\necho planted\n"))},
	}}
	_, err = b.dyn.Resource(cmGVR).Namespace(ns).Create(ctx, cm, metav1.CreateOptions{})
	must(t, err)
	c := openStore(t, cfg, Options{Namespace: ns, PodBin: fake})
	if c.binParts != fp {
		t.Fatalf("parts %+v, want %+v", c.binParts, fp)
	}
	fork := newRun(t, c, "bin4")
	ectx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	_, err = c.Exec(ectx, fork, sandbox.Policy{Command: []string{"/bin/sh", "-c", "touch ran"}, Timeout: time.Minute}, sandbox.Stdio{})
	if err == nil || !strings.Contains(err.Error(), "init container") || !strings.Contains(err.Error(), "exited 23") {
		t.Errorf("a fork whose pod joined other bytes: %v, want its init container's failure (exit 23)", err)
	}
	must(t, c.Remove(ctx, fork))
	must(t, c.Remove(ctx, "bin4"))

	a.Close()
	b.Close()
	c.Close()
	bg := metav1.DeletePropagationBackground
	must(t, c.dyn.Resource(leaseGVR).Namespace(ns).DeleteCollection(context.Background(), metav1.DeleteOptions{PropagationPolicy: &bg}, metav1.ListOptions{LabelSelector: LabelManaged + "=" + Managed}))
	waitNothingLeft(t, cfg, ns, 2*time.Minute)
}

// TestClusterPodWarning: lastWarning, which waitRunning adds to its error
// when a pod does not run within its limit (three minutes: not waited
// for here), names the kubelet's FailedMount for a pod whose binary parts
// are gone (deleted under it), where the pod's state says only
// "Pending"; the control, a pod that runs, has no such warning (the test
// cluster's kubelet warns of its missing cluster DNS for every pod).
func TestClusterPodWarning(t *testing.T) {
	t.Parallel()
	cfg, ns := cluster(t)
	s := openStore(t, cfg, Options{Namespace: ns, streamBin: true})
	ctx := context.Background()
	gone := binParts{sum: strings.Repeat("ab", 32), n: 1} // no such ConfigMap
	uid := map[string]types.UID{}
	for _, name := range []string{"parts-gone", "control"} {
		po := PodOptions{Name: name, Run: "warning", Image: DefaultImage, DeadlineSeconds: 300}
		if name == "parts-gone" {
			po.bin = gone
		}
		made, err := s.dyn.Resource(podGVR).Namespace(ns).Create(ctx, pod(po), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		uid[name] = made.GetUID()
	}
	if _, err := s.waitRunning(ctx, "control", ""); err != nil {
		t.Fatal(err)
	}
	if w := s.lastWarning("control", uid["control"]); strings.Contains(w, "FailedMount") {
		t.Errorf("control: a running pod's warnings %s", w)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		w := s.lastWarning("parts-gone", uid["parts-gone"])
		if strings.Contains(w, "FailedMount") && strings.Contains(w, gone.name(0)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no FailedMount naming %s for the pod whose parts are gone: %q", gone.name(0), w)
		}
		time.Sleep(time.Second)
	}
}
