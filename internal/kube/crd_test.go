package kube

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

func splitDots(s string) []string { return strings.Split(s, ".") }

// installSandboxCRD serves agents.x-k8s.io/v1alpha1 Sandbox as
// kubernetes-sigs/agent-sandbox's CRD does (its podTemplate kept whole:
// the schema here preserves unknown fields rather than copy theirs).
func installSandboxCRD(t *testing.T, cfg *rest.Config) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": "sandboxes.agents.x-k8s.io"},
		"spec": map[string]any{
			"group": "agents.x-k8s.io",
			"scope": "Namespaced",
			"names": map[string]any{"plural": "sandboxes", "singular": "sandbox", "kind": "Sandbox", "listKind": "SandboxList"},
			"versions": []any{map[string]any{
				"name": "v1alpha1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object",
					"properties": map[string]any{
						"spec": map[string]any{
							"type":     "object",
							"required": []any{"podTemplate"},
							"properties": map[string]any{
								"podTemplate": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true},
							},
						},
						"status": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true},
					},
				}},
			}},
		},
	}}
	gvr := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if _, err := dyn.Resource(gvr).Create(context.Background(), crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for !hasSandboxCRD(context.Background(), cfg) {
		if time.Now().After(deadline) {
			t.Fatal("the Sandbox CRD was never served")
		}
		time.Sleep(200 * time.Millisecond)
	}
}
