package kube

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// TestBinParts (API server alone): a store keeps its pod binary in the
// namespace as immutable ConfigMaps of at most binPartSize bytes, whose
// data joined is the binary; a second store of the same binary makes
// none again; a fork's pod gets an init container that joins them,
// checking the binary's SHA-256, and mounts the result read-only where
// the stream would have put it — the spec as stored is forkbomb's as a
// kept pod's claim compares it; a binary over binInPodMax goes by the
// stream; the next forkbomb's Reap deletes another binary's parts no pod
// names once unused for binStaleAfter, and keeps those a pod names or
// used since.
func TestBinParts(t *testing.T) {
	cfg := apiServer(t)
	ctx := context.Background()
	dir := t.TempDir()
	bin := filepath.Join(dir, "forkbomb-pod")
	data := make([]byte, 2*binPartSize+12345)
	rand.Read(data)
	must(t, os.WriteFile(bin, data, 0o755))
	sum := sha256.Sum256(data)
	hexSum := hex.EncodeToString(sum[:])

	before := time.Now().Truncate(time.Second) // the mark has whole seconds
	s := openStore(t, cfg, Options{Namespace: "default", PodBin: bin})
	if s.binParts.n != 3 || s.binParts.sum != hexSum {
		t.Fatalf("binParts %+v, want 3 parts of %s", s.binParts, hexSum)
	}
	cms := s.dyn.Resource(cmGVR).Namespace("default")
	var joined []byte
	uids := map[string]string{}
	for i := 0; i < 3; i++ {
		cm, err := cms.Get(ctx, s.binParts.name(i), metav1.GetOptions{})
		must(t, err)
		if imm, _, _ := unstructured.NestedBool(cm.Object, "immutable"); !imm {
			t.Errorf("%s is not immutable", cm.GetName())
		}
		if cm.GetLabels()[LabelBin] != hexSum[:32] || cm.GetLabels()[LabelManaged] != Managed {
			t.Errorf("%s: labels %v", cm.GetName(), cm.GetLabels())
		}
		enc, _, _ := unstructured.NestedString(cm.Object, "binaryData", "part")
		b, err := base64.StdEncoding.DecodeString(enc)
		must(t, err)
		joined = append(joined, b...)
		uids[cm.GetName()] = string(cm.GetUID())
	}
	if !bytes.Equal(joined, data) {
		t.Fatalf("the parts joined are %d bytes, not the binary's %d", len(joined), len(data))
	}

	// the same binary again: nothing made
	s2 := openStore(t, cfg, Options{Namespace: "default", PodBin: bin})
	if s2.binParts != s.binParts {
		t.Errorf("second store: %+v", s2.binParts)
	}
	for name, uid := range uids {
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		must(t, err)
		if string(cm.GetUID()) != uid { // the first part's version moves: it is marked used
			t.Errorf("%s made again", name)
		}
	}

	// a fork's pod: no kubelet here, so it is stored and never runs
	fork := newRun(t, s, "run-bin")
	p, _ := execStored(t, s, fork, sandbox.Policy{Command: []string{"true"}, Timeout: time.Minute})
	inits, _, _ := unstructured.NestedSlice(p.Object, "spec", "initContainers")
	if len(inits) != 1 {
		t.Fatalf("init containers: %v", inits)
	}
	ic := &unstructured.Unstructured{Object: inits[0].(map[string]any)}
	cs, _, _ := unstructured.NestedSlice(p.Object, "spec", "containers")
	ctr := &unstructured.Unstructured{Object: cs[0].(map[string]any)}
	checkFields(t, []fieldCase{
		{"init image", ic, []string{"image"}, DefaultImage},
		{"init read-only root", ic, []string{"securityContext", "readOnlyRootFilesystem"}, "true"},
		{"init caps dropped", ic, []string{"securityContext", "capabilities", "drop"}, `["ALL"]`},
		{"init no escalation", ic, []string{"securityContext", "allowPrivilegeEscalation"}, "false"},
		{"init mounts", ic, []string{"volumeMounts"},
			`[{"mountPath":"/parts","name":"forkbomb-parts","readOnly":true},{"mountPath":"/out","name":"forkbomb"}]`},
		{"agent mounts", ctr, []string{"volumeMounts"},
			`[{"mountPath":"/work","name":"work"},{"mountPath":"/tmp","name":"tmp"},{"mountPath":"/work/.forkbomb","name":"forkbomb","readOnly":true}]`},
	})
	// as stored, the spec is forkbomb's for its options: what a kept
	// pod's claim compares (keptSpec) finds no field the API server added
	// to the init container or the volumes
	have, _, _ := unstructured.NestedMap(p.Object, "spec")
	want := podSpec(PodOptions{Run: "run-bin", Image: DefaultImage, bin: s.binParts})
	want["activeDeadlineSeconds"] = have["activeDeadlineSeconds"]
	var w, hv any
	must(t, roundTrip(want, &w))
	must(t, roundTrip(have, &hv))
	if err := sameFields("spec", w, hv); err != nil {
		t.Errorf("the stored pod's spec is not forkbomb's as a claim compares it: %v", err)
	}
	if cm, err := cms.Get(ctx, s.binParts.name(0), metav1.GetOptions{}); err != nil {
		t.Error(err)
	} else if used, err := time.Parse(time.RFC3339, cm.GetAnnotations()[annBinUsed]); err != nil || used.Before(before) {
		t.Errorf("the first part is not marked used: %v %v", cm.GetAnnotations(), err)
	}
	args, _, _ := unstructured.NestedStringSlice(ic.Object, "command")
	if len(args) < 5 || args[4] != hexSum {
		t.Errorf("the init container's command %q does not check %s", args, hexSum)
	}
	if got := str(t, p, "spec", "volumes"); !bytes.Contains([]byte(got), []byte(s.binParts.name(2))) {
		t.Errorf("volumes %s do not project %s", got, s.binParts.name(2))
	}

	// a binary over binInPodMax goes by the stream
	big := filepath.Join(dir, "big")
	f, err := os.Create(big)
	must(t, err)
	must(t, f.Truncate(binInPodMax+1))
	f.Close()
	sb := openStore(t, cfg, Options{Namespace: "default", PodBin: big})
	if sb.binParts.n != 0 {
		t.Errorf("a %d-byte binary got parts %+v", binInPodMax+1, sb.binParts)
	}

	// another binary's parts: kept while a pod names them, deleted once
	// none does; this binary's kept either way
	other := filepath.Join(dir, "other")
	must(t, os.WriteFile(other, []byte("#!/bin/sh\n"), 0o755))
	so := openStore(t, cfg, Options{Namespace: "default", PodBin: other})
	so.binStale = 0
	must(t, reapNow(so))
	if _, err := cms.Get(ctx, s.binParts.name(0), metav1.GetOptions{}); err != nil {
		t.Errorf("parts a pod names were deleted: %v", err)
	}
	must(t, s.Remove(ctx, fork))
	must(t, s.Remove(ctx, "run-bin"))
	so.binStale = time.Hour
	must(t, reapNow(so))
	if _, err := cms.Get(ctx, s.binParts.name(1), metav1.GetOptions{}); err != nil {
		t.Errorf("parts used within the hour were deleted: %v", err)
	}
	so.binStale = 0
	must(t, reapNow(so))
	for i := 0; i < 3; i++ {
		if _, err := cms.Get(ctx, s.binParts.name(i), metav1.GetOptions{}); err == nil {
			t.Errorf("%s outlived its last pod", s.binParts.name(i))
		}
	}
	if _, err := cms.Get(ctx, so.binParts.name(0), metav1.GetOptions{}); err != nil {
		t.Errorf("the reaper's own binary's part: %v", err)
	}
}

func reapNow(s *Store) error {
	_, err := s.Reap(context.Background())
	if err != nil {
		return fmt.Errorf("reap: %w", err)
	}
	return nil
}
