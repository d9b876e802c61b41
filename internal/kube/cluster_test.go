package kube

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/forkbomb/forkbomb/internal/testutil"
)

// kubeconfig is the test cluster's (scripts/k8s-cluster up; env prints
// it), never the user's own: the tests create and delete namespaces.
func kubeconfig() string {
	if k := os.Getenv("FORKBOMB_K8S_KUBECONFIG"); k != "" {
		return k
	}
	return "/var/lib/forkbomb-k8s/admin.kubeconfig"
}

// cluster returns the real single-node test cluster and a namespace of
// the test's own, deleted with it; the test skips (fails under
// FORKBOMB_REQUIRE_ALL=1) when the cluster is not up.
func cluster(t testing.TB) (*rest.Config, string) {
	t.Helper()
	kc := kubeconfig()
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		testutil.SkipOrFail(t, "no test cluster (%v): scripts/k8s-cluster build && scripts/k8s-cluster up", err)
	}
	var v struct {
		GitVersion string `json:"gitVersion"`
	}
	if err := getJSON(context.Background(), cfg, "/version", &v); err != nil {
		testutil.SkipOrFail(t, "the test cluster at %s does not answer (%v): scripts/k8s-cluster up", cfg.Host, err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 4)
	rand.Read(b)
	ns := "fbtest-" + hex.EncodeToString(b)
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}
	ctx := context.Background()
	if _, err := dyn.Resource(nsGVR).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dyn.Resource(nsGVR).Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	// pods need the namespace's default service account (the
	// controller-manager makes it), even one that mounts no token
	sa := dyn.Resource(podGVR.GroupVersion().WithResource("serviceaccounts")).Namespace(ns)
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := sa.Get(ctx, "default", metav1.GetOptions{}); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("namespace %s has no default service account: is the controller-manager running?", ns)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return cfg, ns
}

// leftovers lists what forkbomb made in ns and is still there.
func leftovers(t testing.TB, cfg *rest.Config, ns string) []string {
	t.Helper()
	dyn, _ := dynamic.NewForConfig(cfg)
	var out []string
	for _, gvr := range []struct {
		kind string
		r    dynamic.NamespaceableResourceInterface
	}{{"pod", dyn.Resource(podGVR)}, {"lease", dyn.Resource(leaseGVR)}, {"networkpolicy", dyn.Resource(netpolGVR)}, {"sandbox", dyn.Resource(sandboxGVR)},
		{"sandboxtemplate", dyn.Resource(sandboxTemplateGVR)}, {"sandboxwarmpool", dyn.Resource(sandboxPoolGVR)}, {"sandboxclaim", dyn.Resource(sandboxClaimGVR)}} {
		l, err := gvr.r.Namespace(ns).List(context.Background(), metav1.ListOptions{LabelSelector: LabelManaged + "=" + Managed})
		if strings.HasPrefix(gvr.kind, "sandbox") && apierrors.IsNotFound(err) {
			continue // a cluster that serves no Sandbox
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range l.Items {
			out = append(out, fmt.Sprintf("%s/%s", gvr.kind, i.GetName()))
		}
	}
	return out
}

// waitNothingLeft polls until nothing of forkbomb's is left in ns (the
// garbage collector and the kubelet take a moment), or fails naming it.
func waitNothingLeft(t *testing.T, cfg *rest.Config, ns string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		left := leftovers(t, cfg, ns)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("left in the cluster after %s: %v", within, left)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
