package kube

// forkbomb's binary in a pod from the start (binary parts). A fork's pod
// runs forkbomb-pod: the runner of every command, its sandbox's init, the
// session server. Sent over the fork's start exec it costs that exec the
// binary's megabytes through the API server, the kubelet and the runtime
// while the race waits (bench/README.md, stop 44). Instead the store
// keeps the binary in the namespace once per build — a few immutable
// ConfigMaps of at most binPartSize bytes each, named by its SHA-256 — and
// every pod it makes starts with an init container that joins them into
// an emptyDir of the pod's own, checks the SHA-256 (the image's
// sha256sum, against the sum forkbomb wrote in the pod's spec) and ends.
// The agent's container mounts that emptyDir read-only at /work/.forkbomb,
// where the stream would have put the binary: nothing in the pod can
// write it, and a kept or warm pod has it before a run claims it, so a
// fork's start exec only checks the pod and execs it.
//
// The stream stays where the parts cannot be made (no right to make
// ConfigMaps, a binary over binInPodMax) and for a tree image's pods,
// whose image holds the binary.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
)

const (
	// LabelBin marks the ConfigMaps of one binary with its SHA-256's first
	// 32 hex digits.
	LabelBin = "forkbomb.dev/bin"
	// binPartSize is a part's size: the API server takes at most 1 MiB of
	// data in one ConfigMap.
	binPartSize = 1000 * 1000
	// binInPodMax: a larger binary goes by the stream (a test binary with
	// the race detector is ~100 MB, which would weigh on the cluster's
	// store for every namespace it ran in).
	binInPodMax = 24 << 20
	// binStaleAfter: the parts of another binary are deleted by a later
	// forkbomb's Reap once this old and no pod of the namespace names them.
	binStaleAfter = time.Hour
	// stBinSum: the init container's exit status when the parts joined are
	// not the binary the spec names.
	stBinSum = 23
	// annBinUsed, on a binary's first part, is when a store last used it
	// (storeBin): reapBins counts from then.
	annBinUsed = "forkbomb.dev/used"
)

var cmGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// binParts says how a pod gets forkbomb's binary from its start.
type binParts struct {
	sum string // the binary's SHA-256, hex
	n   int    // how many parts
}

// binInPod: the fork's pod has the binary from its start (a pod of a
// tree image has it from its image instead).
func (s *Store) binInPod(fs *forkState) bool { return s.binParts.n > 0 && fs.image == "" }

func (b binParts) label() string { return b.sum[:32] }

// name is part i's ConfigMap.
func (b binParts) name(i int) string { return fmt.Sprintf("forkbomb-bin-%s-%02d", b.label(), i) }

// storeBin makes the binary's parts in the namespace where they are not
// yet, marks them used now (annBinUsed, on the first part), and returns
// them. It lists their names only (metadata): a run after the first
// sends nothing. The bytes uploaded are those podBinFile hashed, whose
// SHA-256 the pods' init containers check.
//
// Another forkbomb's reapBins deletes the first part (if its version is
// still the one it listed) before the others; so where the mark finds
// the first part gone, or the list found some parts missing but not
// all, the list and the mark are made again a second later, until the
// parts are all there and marked: by then a reap that had begun has
// ended.
func (s *Store) storeBin(ctx context.Context, md metadata.Interface) (binParts, error) {
	bin, sum, err := s.podBinFile()
	if err != nil {
		return binParts{}, err
	}
	data := s.binData
	if data == nil {
		return binParts{}, fmt.Errorf("%s is over the %d MB a pod gets as ConfigMaps", bin, binInPodMax>>20)
	}
	b := binParts{sum: sum, n: (len(data) + binPartSize - 1) / binPartSize}
	cms := s.dyn.Resource(cmGVR).Namespace(s.o.Namespace)
	for try := 0; ; try++ {
		list, err := md.Resource(cmGVR).Namespace(s.o.Namespace).List(ctx, metav1.ListOptions{LabelSelector: LabelBin + "=" + b.label()})
		if err != nil {
			return binParts{}, err
		}
		have := map[string]bool{}
		for _, m := range list.Items {
			if m.DeletionTimestamp == nil {
				have[m.Name] = true
			}
		}
		made := 0
		for i := 0; i < b.n; i++ {
			if have[b.name(i)] {
				continue
			}
			cm := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "v1",
				"kind":       "ConfigMap",
				"metadata": map[string]any{
					"name":   b.name(i),
					"labels": map[string]any{LabelManaged: Managed, LabelBin: b.label()},
				},
				"immutable":  true,
				"binaryData": map[string]any{"part": base64.StdEncoding.EncodeToString(data[i*binPartSize : min((i+1)*binPartSize, len(data))])},
			}}
			_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return binParts{}, err
			}
			// one that exists is taken as it is: the init container checks
			// the bytes joined against the sum
			made++
		}
		mark, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{annBinUsed: time.Now().UTC().Format(time.RFC3339)}}})
		_, err = cms.Patch(ctx, b.name(0), types.MergePatchType, mark, metav1.PatchOptions{})
		switch {
		case err == nil && (made == 0 || made == b.n && try == 0):
			// all were there, or none was (a reap deletes only what it
			// listed, by UID): no reap's deletes are still to come
			return b, nil
		case err != nil && !apierrors.IsNotFound(err):
			return binParts{}, err
		case try == 4:
			return binParts{}, fmt.Errorf("forkbomb's binary's parts in namespace %s keep being deleted", s.o.Namespace)
		}
		select {
		case <-ctx.Done():
			return binParts{}, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// binVolumes are the pod's volumes of the binary: its parts, projected
// into one folder, and the emptyDir the init container joins them in.
func (b binParts) volumes() []any {
	sources := make([]any, b.n)
	for i := range sources {
		sources[i] = map[string]any{"configMap": map[string]any{
			"name":  b.name(i),
			"items": []any{map[string]any{"key": "part", "path": fmt.Sprintf("%02d", i)}},
		}}
	}
	return []any{
		map[string]any{"name": "forkbomb-parts", "projected": map[string]any{"defaultMode": int64(0o444), "sources": sources}},
		map[string]any{"name": "forkbomb", "emptyDir": map[string]any{}},
	}
}

// initContainer joins the parts, checks them and leaves the binary,
// executable by the pod's user alone; a sum that differs leaves nothing
// and fails the pod, with why as its termination message, as does an
// image without sha256sum: the parts are whatever the namespace holds
// under their names, and a binary's own hello could lie.
func (b binParts) initContainer(image string, resources, securityContext map[string]any) map[string]any {
	script := `cat /parts/* >/out/forkbomb || exit 1
if ! command -v sha256sum >/dev/null; then
  rm -f /out/forkbomb
  echo "the image has no sha256sum to check forkbomb's binary with" >/dev/termination-log
  exit ` + strconv.Itoa(stBinSum) + `
fi
if [ "$(sha256sum </out/forkbomb | cut -d' ' -f1)" != "$1" ]; then
  rm -f /out/forkbomb
  echo "forkbomb's binary joined from ConfigMaps $2 is not the one whose SHA-256 the pod's spec names" >/dev/termination-log
  exit ` + strconv.Itoa(stBinSum) + `
fi
chmod 500 /out/forkbomb`
	return map[string]any{
		"name":            "forkbomb-bin",
		"image":           image,
		"imagePullPolicy": pullPolicy(image),
		"command":         []any{"/bin/sh", "-c", script, "sh", b.sum, b.name(0) + "…"},
		"resources":       resources,
		"securityContext": securityContext,
		"volumeMounts": []any{
			map[string]any{"name": "forkbomb-parts", "mountPath": "/parts", "readOnly": true},
			map[string]any{"name": "forkbomb", "mountPath": "/out"},
		},
	}
}

// reapBins deletes the parts of binaries other than this store's
// whose last use (annBinUsed on the first part, else its making) is
// older than binStaleAfter and which no pod of the namespace names — a
// pod still starting reads them. The first part goes first, on the
// condition that its version is the one listed (a store marking it used
// meanwhile keeps the whole binary), then the others. Best effort: where
// they cannot be listed, they stay.
func (s *Store) reapBins(ctx context.Context) {
	if s.md == nil {
		return
	}
	_, sum, _ := s.podBinFile()
	list, err := s.md.Resource(cmGVR).Namespace(s.o.Namespace).List(ctx, metav1.ListOptions{LabelSelector: LabelManaged + "=" + Managed + "," + LabelBin})
	if err != nil {
		return
	}
	groups := map[string][]metav1.PartialObjectMetadata{}
	last := map[string]time.Time{}
	for _, m := range list.Items {
		l := m.Labels[LabelBin]
		if len(sum) >= 32 && l == sum[:32] || m.DeletionTimestamp != nil {
			continue
		}
		groups[l] = append(groups[l], m)
		used := m.CreationTimestamp.Time
		if t, err := time.Parse(time.RFC3339, m.Annotations[annBinUsed]); err == nil && t.After(used) {
			used = t
		}
		if used.After(last[l]) {
			last[l] = used
		}
	}
	for l := range groups {
		if time.Since(last[l]) <= s.binStale {
			delete(groups, l)
		}
	}
	if len(groups) == 0 {
		return
	}
	pods, err := s.dyn.Resource(podGVR).Namespace(s.o.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	named := map[string]bool{}
	for _, p := range pods.Items {
		vols, _, _ := unstructured.NestedSlice(p.Object, "spec", "volumes")
		for _, v := range vols {
			vm, _ := v.(map[string]any)
			srcs, _, _ := unstructured.NestedSlice(vm, "projected", "sources")
			for _, src := range srcs {
				sm, _ := src.(map[string]any)
				if n, ok, _ := unstructured.NestedString(sm, "configMap", "name"); ok {
					named[n] = true
				}
			}
		}
	}
	cms := s.dyn.Resource(cmGVR).Namespace(s.o.Namespace)
groups:
	for _, parts := range groups {
		sort.Slice(parts, func(i, j int) bool { return parts[i].Name < parts[j].Name })
		for _, m := range parts {
			if named[m.Name] {
				continue groups
			}
		}
		for i, m := range parts {
			uid, rv := m.UID, m.ResourceVersion
			pre := &metav1.Preconditions{UID: &uid}
			if i == 0 {
				pre.ResourceVersion = &rv
			}
			if err := cms.Delete(ctx, m.Name, metav1.DeleteOptions{Preconditions: pre}); err != nil && i == 0 {
				continue groups // marked used since, or gone
			}
		}
	}
}

// keepBin lists the binary's parts again, making any gone, when a
// quarter of binStaleAfter has passed since they were last: another
// forkbomb's Reap deletes parts no pod names once that old, and a store
// that lives long (a gateway's) may be between pods then.
func (s *Store) keepBin(ctx context.Context) {
	s.mu.Lock()
	due := s.binParts.n > 0 && time.Since(s.binAt) > s.binStale/4
	if due {
		s.binAt = time.Now()
	}
	s.mu.Unlock()
	if due {
		s.storeBin(ctx, s.md) // the same parts: a failure leaves the pods to say it
	}
}
