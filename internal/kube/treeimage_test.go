package kube

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/forkbomb/forkbomb/internal/testutil"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// TestTreeImage: a pid 1's tree image is the forks' image plus one layer
// holding the tree (the pod's user's) and forkbomb's binary (root's,
// read-only to that user) under /work, with no times; a second pid 1 of
// the same commit finds it pushed (the same bytes), another commit makes
// another, and a tag that names other content is pushed over, not run.
func TestTreeImage(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	base, err := random.Image(512, 2)
	must(t, err)
	baseRef := host + "/forkbomb/agent:v2"
	ref, err := name.ParseReference(baseRef)
	must(t, err)
	must(t, remote.Write(ref, base))

	dir := t.TempDir()
	bin := filepath.Join(dir, "forkbomb-pod")
	must(t, os.WriteFile(bin, []byte("#!/bin/sh\necho pod binary\n"), 0o700))
	local, err := workspace.Open(filepath.Join(dir, "state"))
	must(t, err)
	s := &Store{o: Options{Local: local, Image: baseRef, Registry: host + "/forkbomb", PodBin: bin}}
	repo := fixture(t)
	// links (a pid 1 holds only those that stay in it) go as links, never
	// as what they point at
	must(t, os.MkdirAll(filepath.Join(repo, "sub"), 0o755))
	must(t, os.WriteFile(filepath.Join(repo, "sub", "f"), []byte("f\n"), 0o644))
	must(t, os.Symlink("value", filepath.Join(repo, "link")))
	must(t, os.Symlink("sub", filepath.Join(repo, "dirlink")))
	testutil.Git(t, repo, "add", "sub", "link", "dirlink")
	testutil.Git(t, repo, "commit", "-qm", "links")
	ctx := context.Background()
	newPid1 := func(name, rev string) {
		t.Helper()
		top, rev, err := workspace.ResolveBase(ctx, repo, rev)
		must(t, err)
		_, err = local.New(ctx, name, workspace.NewOptions{Repo: top, Rev: rev})
		must(t, err)
	}

	newPid1("a", "HEAD")
	first, err := s.treeImage(ctx, "a")
	must(t, err)
	if !first.Pushed || !strings.HasPrefix(first.Ref, host+"/forkbomb/"+treeRepo+"@sha256:") {
		t.Fatalf("first image: %+v", first)
	}
	img := pull(t, first.Ref)
	layers, err := img.Layers()
	must(t, err)
	baseLayers, err := base.Layers()
	must(t, err)
	if len(layers) != len(baseLayers)+1 {
		t.Fatalf("%d layers over a base of %d", len(layers), len(baseLayers))
	}
	for i, l := range baseLayers {
		want, _ := l.Digest()
		got, _ := layers[i].Digest()
		if got != want {
			t.Errorf("layer %d is %s, the base's %s", i, got, want)
		}
	}
	entries := layerEntries(t, layers[len(layers)-1])
	for _, c := range []struct {
		name string
		uid  int
		mode int64
		body string
	}{
		{"work/", 0, 0o755, ""},
		{"work/tree/", agentUID, 0o755, ""},
		{"work/tree/value", agentUID, 0o644, "1\n"},
		{"work/tree/.git/", agentUID, 0o755, ""},
		{"work/tree/.git/index", agentUID, 0o644, ""},
		{"work/.forkbomb/", 0, 0o755, ""},
		{"work/.forkbomb/forkbomb", 0, 0o755, "#!/bin/sh\necho pod binary\n"},
		{"work/.wh..wh..opq", 0, 0o644, ""},
		{"work/.scratch/", agentUID, 0o700, ""},
	} {
		e, ok := entries[c.name]
		if !ok {
			t.Errorf("%s: not in the layer", c.name)
			continue
		}
		if e.h.Uid != c.uid || e.h.Gid != c.uid || e.h.Mode != c.mode {
			t.Errorf("%s: uid %d gid %d mode %o; want %d %o", c.name, e.h.Uid, e.h.Gid, e.h.Mode, c.uid, c.mode)
		}
		if c.body != "" && e.body != c.body {
			t.Errorf("%s: %q; want %q", c.name, e.body, c.body)
		}
	}
	for name, target := range map[string]string{"work/tree/link": "value", "work/tree/dirlink": "sub"} {
		if e := entries[name]; e.h == nil || e.h.Typeflag != tar.TypeSymlink || e.h.Linkname != target || e.body != "" {
			t.Errorf("%s: %+v; want a link to %s and nothing else", name, e.h, target)
		}
	}
	for n := range entries {
		if strings.HasPrefix(n, "work/tree/dirlink/") {
			t.Errorf("%s: the layer went through the link", n)
		}
	}
	for n, e := range entries {
		if e.h.ModTime.Unix() != 0 {
			t.Errorf("%s: time %v", n, e.h.ModTime)
		}
	}

	// the same commit again: a new pid 1 (its index's stat data differ)
	newPid1("b", "HEAD")
	again, err := s.treeImage(ctx, "b")
	must(t, err)
	if again.Pushed || again.Ref != first.Ref {
		t.Errorf("the same commit: %+v; want %s found, not pushed", again, first.Ref)
	}

	// another commit: another image
	must(t, os.WriteFile(filepath.Join(repo, "value"), []byte("2\n"), 0o644))
	testutil.Git(t, repo, "commit", "-qam", "two")
	newPid1("c", "HEAD")
	other, err := s.treeImage(ctx, "c")
	must(t, err)
	if !other.Pushed || other.Ref == first.Ref {
		t.Errorf("another commit: %+v; want a new image", other)
	}

	// the tag of a's image now names other content: pushed again, and the
	// pods run what forkbomb pushed
	trees := mustRef(t, first.Ref).Context()
	tags, err := remote.List(trees)
	must(t, err)
	for _, tg := range tags {
		r := trees.Tag(tg)
		got, err := remote.Get(r)
		must(t, err)
		if strings.HasSuffix(first.Ref, got.Digest.String()) {
			// the tag moved to other content of as many layers
			other, err := random.Layer(256, types.DockerLayer)
			must(t, err)
			moved, err := mutate.AppendLayers(base, other)
			must(t, err)
			must(t, remote.Write(r, moved))
		}
	}
	newPid1("d", "HEAD~1")
	moved, err := s.treeImage(ctx, "d")
	must(t, err)
	if !moved.Pushed || moved.Ref != first.Ref {
		t.Errorf("a moved tag: %+v; want %s pushed again", moved, first.Ref)
	}

	// a name an image layer reads as a deletion: no tree image
	must(t, os.WriteFile(filepath.Join(repo, ".wh.value"), []byte("x\n"), 0o644))
	testutil.Git(t, repo, "add", ".wh.value")
	testutil.Git(t, repo, "commit", "-qm", "whiteout")
	newPid1("e", "HEAD")
	if _, err := s.treeImage(ctx, "e"); !errors.Is(err, errWhiteoutName) {
		t.Errorf("a tree holding .wh.value: %v; want errWhiteoutName", err)
	}
}

func mustRef(t *testing.T, s string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(s)
	must(t, err)
	return r
}

func pull(t *testing.T, ref string) v1.Image {
	t.Helper()
	img, err := remote.Image(mustRef(t, ref))
	must(t, err)
	return img
}

type layerEntry struct {
	h    *tar.Header
	body string
}

func layerEntries(t *testing.T, l v1.Layer) map[string]layerEntry {
	t.Helper()
	rc, err := l.Uncompressed()
	must(t, err)
	defer rc.Close()
	out := map[string]layerEntry{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		must(t, err)
		var b bytes.Buffer
		io.Copy(&b, tr)
		out[h.Name] = layerEntry{h, b.String()}
	}
}

// TestTreeImagePodSpec: a pod of a tree image differs from a plain one
// in three things only — its root is writable (the pod's copy of the
// tree), /work is the image's (no volume hides it), and the image, named
// by its digest, is pulled where the node lacks it; a tag is never pulled.
func TestTreeImagePodSpec(t *testing.T) {
	t.Parallel()
	const img = "127.0.0.1:5000/forkbomb/forkbomb-tree@sha256:96bfdc233dfe2a9541e4483785e067a392cca3665c79a329ad6ebb578d7380af"
	o := PodOptions{Name: "fb-x", Run: "x", Image: img, DeadlineSeconds: 60, Memory: 1 << 30, CPUs: 1}
	plain := podSpec(o)
	o.TreeInImage = true
	tree := podSpec(o)
	ctr := func(spec map[string]any) map[string]any { return spec["containers"].([]any)[0].(map[string]any) }
	if got := ctr(tree)["securityContext"].(map[string]any)["readOnlyRootFilesystem"]; got != false {
		t.Errorf("tree image: readOnlyRootFilesystem %v", got)
	}
	if got := ctr(plain)["securityContext"].(map[string]any)["readOnlyRootFilesystem"]; got != true {
		t.Errorf("plain: readOnlyRootFilesystem %v", got)
	}
	if got := fmt.Sprint(tree["volumes"], ctr(tree)["volumeMounts"]); got != "[map[emptyDir:map[] name:tmp]] [map[mountPath:/tmp name:tmp]]" {
		t.Errorf("tree image: volumes and mounts %s", got)
	}
	if got := ctr(tree)["imagePullPolicy"]; got != "IfNotPresent" {
		t.Errorf("by digest: imagePullPolicy %v", got)
	}
	if got := pullPolicy(DefaultImage); got != "Never" {
		t.Errorf("a tag: imagePullPolicy %v", got)
	}
	// the rest is the same
	for _, spec := range []map[string]any{plain, tree} {
		delete(ctr(spec)["securityContext"].(map[string]any), "readOnlyRootFilesystem")
		delete(ctr(spec), "volumeMounts")
		delete(spec, "volumes")
	}
	a, _ := json.Marshal(plain)
	b, _ := json.Marshal(tree)
	if !bytes.Equal(a, b) {
		t.Errorf("the specs differ in more:\n%s\n%s", a, b)
	}
}

// TestProbeTextTreeImage: the probe's report says what a tree image
// changes: a root that is not read-only, and the tree in the registry.
func TestProbeTextTreeImage(t *testing.T) {
	t.Parallel()
	var plain, tree bytes.Buffer
	(&ProbeReport{}).WriteText(&plain)
	(&ProbeReport{Registry: "registry.example/team"}).WriteText(&tree)
	if !strings.Contains(plain.String(), "read-only root filesystem") || strings.Contains(plain.String(), "registry") {
		t.Errorf("without a registry:\n%s", plain.String())
	}
	for _, want := range []string{"not read-only", "--registry registry.example/team", "readable by whoever can pull from it"} {
		if !strings.Contains(tree.String(), want) {
			t.Errorf("with a registry, no %q:\n%s", want, tree.String())
		}
	}
	if strings.Contains(tree.String(), "read-only root filesystem") {
		t.Errorf("with a registry, the root is said read-only:\n%s", tree.String())
	}
}

// TestPodRunningGivesUp: a pod whose image the node lacks and may not
// pull, or whose image name is not one, fails at once; a pull under way
// (or backing off: it may still come) is waited for.
func TestPodRunningGivesUp(t *testing.T) {
	t.Parallel()
	waiting := func(reason string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"metadata": map[string]any{"name": "fb-x"},
			"status": map[string]any{"phase": "Pending", "containerStatuses": []any{map[string]any{
				"state": map[string]any{"waiting": map[string]any{"reason": reason, "message": "details"}}}}}}}
	}
	for reason, fails := range map[string]bool{
		"ErrImageNeverPull": true, "InvalidImageName": true,
		"ContainerCreating": false, "ErrImagePull": false, "ImagePullBackOff": false,
	} {
		done, err := podRunning(waiting(reason))
		if done != fails || (err != nil) != fails {
			t.Errorf("%s: done %v, err %v; want done and an error: %v", reason, done, err, fails)
		}
		if fails && !strings.Contains(fmt.Sprint(err), reason) {
			t.Errorf("%s: the error does not say why: %v", reason, err)
		}
	}
	// the message is the pod's status, which whoever may write it
	// chooses: quoted, so no line or terminal control of its reaches
	// forkbomb's output
	u := waiting("ErrImageNeverPull")
	unstructured.SetNestedSlice(u.Object, []any{map[string]any{"state": map[string]any{"waiting": map[string]any{
		"reason": "ErrImageNeverPull", "message": "no\nforkbomb: fork 0 won\x1b[2J"}}}}, "status", "containerStatuses")
	if got := waitingReason(u); strings.ContainsAny(got, "\n\x1b") || !strings.Contains(got, `\n`) {
		t.Errorf("waitingReason let the pod's message through as it is: %q", got)
	}
}
