package kube

import (
	"maps"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Labels every object forkbomb makes carries, so a probe, a reaper and a
// test find them without knowing a run.
const (
	LabelManaged = "app.kubernetes.io/managed-by"
	Managed      = "forkbomb"
	LabelRun     = "forkbomb.dev/run"
	LabelFork    = "forkbomb.dev/fork"
	container    = "agent"
	// uid and gid the agent runs as: not root, and no user of the image
	// owns a file it could use.
	agentUID = 65534
)

var (
	podGVR    = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	leaseGVR  = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	netpolGVR = schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"}
	rcGVR     = schema.GroupVersionResource{Group: "node.k8s.io", Version: "v1", Resource: "runtimeclasses"}
	nsGVR     = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	eventGVR  = schema.GroupVersionResource{Version: "v1", Resource: "events"}
)

// sandboxGVR is agent-sandbox's Sandbox (kubernetes-sigs/agent-sandbox)
// as its v1 releases serve it; the v1alpha1 of its releases before is not
// used (a cluster that serves only that gets plain pods).
var sandboxGVR = schema.GroupVersionResource{Group: "agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxes"}

// PodOptions are what a fork's pod is made from.
type PodOptions struct {
	Name         string
	Run          string // the run's pid 1 name: the anchor and the labels
	Image        string
	RuntimeClass string
	// Deadline bounds the pod's whole life (activeDeadlineSeconds): the
	// kubelet kills it then whatever forkbomb does.
	DeadlineSeconds int64
	Memory          int64   // bytes; 0: none
	CPUs            float64 // cores; 0: none
	Owner           *unstructured.Unstructured
	// TreeInImage: Image is a tree image (treeimage.go), which holds the
	// tree and forkbomb's binary in /work: the pod's root is then its
	// writable copy of them (the runtime's overlay, an upper layer of the
	// pod's own), not read-only, and /work is not a volume.
	TreeInImage bool
	// bin, when set, is forkbomb's binary as ConfigMaps (binmap.go): an
	// init container joins them in the pod's own emptyDir, mounted
	// read-only at /work/.forkbomb. Not with TreeInImage.
	bin binParts
}

// pullPolicy is IfNotPresent for an image named by its digest, whose
// content a pull cannot change, else Never: a tag is run only as the node
// holds it.
func pullPolicy(image string) string {
	if strings.Contains(image, "@sha256:") {
		return "IfNotPresent"
	}
	return "Never"
}

// podSpec is the confinement of every fork, in one place: no service
// account token, no host namespaces, a non-root user with no capabilities
// and no way to gain any, the runtime's default seccomp profile, a
// read-only root filesystem with two emptyDirs (the tree and /tmp), and
// the race's limits as requests and limits (with a tree image, the root
// is the pod's writable copy of the image instead: PodOptions.TreeInImage),
// and forkbomb's binary from ConfigMaps where the store made them
// (binmap.go). The pod's own process only sleeps; the agent arrives over
// exec.
func podSpec(o PodOptions) map[string]any {
	resources := map[string]any{}
	limits := map[string]any{}
	requests := map[string]any{}
	if o.Memory > 0 {
		limits["memory"] = resource.NewQuantity(o.Memory, resource.BinarySI).String()
		requests["memory"] = limits["memory"]
	}
	if o.CPUs > 0 {
		limits["cpu"] = resource.NewMilliQuantity(int64(o.CPUs*1000), resource.DecimalSI).String()
		requests["cpu"] = "10m" // a share, not a reservation: 16 forks on 2 cores still schedule
	}
	if len(limits) > 0 {
		resources["limits"] = limits
		resources["requests"] = requests
	}
	spec := map[string]any{
		"automountServiceAccountToken":  false,
		"enableServiceLinks":            false,
		"hostNetwork":                   false,
		"hostPID":                       false,
		"hostIPC":                       false,
		"restartPolicy":                 "Never",
		"terminationGracePeriodSeconds": int64(0),
		"activeDeadlineSeconds":         o.DeadlineSeconds,
		"securityContext": map[string]any{
			"runAsNonRoot":   true,
			"runAsUser":      int64(agentUID),
			"runAsGroup":     int64(agentUID),
			"fsGroup":        int64(agentUID),
			"seccompProfile": map[string]any{"type": "RuntimeDefault"},
		},
		"containers": []any{map[string]any{
			"name":            container,
			"image":           o.Image,
			"imagePullPolicy": pullPolicy(o.Image),
			// The pod's init only waits; its deadline ends it.
			"command":    []any{"/bin/sleep", "2147483647"},
			"workingDir": "/work",
			"env": []any{
				map[string]any{"name": "HOME", "value": "/tmp/home"},
			},
			"resources": resources,
			"securityContext": map[string]any{
				"allowPrivilegeEscalation": false,
				"privileged":               false,
				"readOnlyRootFilesystem":   true,
				"runAsNonRoot":             true,
				"capabilities":             map[string]any{"drop": []any{"ALL"}},
				"seccompProfile":           map[string]any{"type": "RuntimeDefault"},
			},
			"volumeMounts": []any{
				map[string]any{"name": "work", "mountPath": "/work"},
				map[string]any{"name": "tmp", "mountPath": "/tmp"},
			},
		}},
		"volumes": []any{
			map[string]any{"name": "work", "emptyDir": map[string]any{}},
			map[string]any{"name": "tmp", "emptyDir": map[string]any{}},
		},
	}
	if o.bin.n > 0 && !o.TreeInImage {
		ctr := spec["containers"].([]any)[0].(map[string]any)
		ctr["volumeMounts"] = append(ctr["volumeMounts"].([]any),
			map[string]any{"name": "forkbomb", "mountPath": "/work/.forkbomb", "readOnly": true})
		spec["volumes"] = append(spec["volumes"].([]any), o.bin.volumes()...)
		spec["initContainers"] = []any{o.bin.initContainer(o.Image, resources, maps.Clone(ctr["securityContext"].(map[string]any)))}
	}
	if o.TreeInImage {
		ctr := spec["containers"].([]any)[0].(map[string]any)
		ctr["securityContext"].(map[string]any)["readOnlyRootFilesystem"] = false
		ctr["volumeMounts"] = ctr["volumeMounts"].([]any)[1:]
		spec["volumes"] = spec["volumes"].([]any)[1:]
	}
	if o.RuntimeClass != "" {
		spec["runtimeClassName"] = o.RuntimeClass
	}
	// A run's pods spread over the nodes, one more on a node only where
	// every node has as many (a preference: on one node they all fit).
	spec["topologySpreadConstraints"] = []any{map[string]any{
		"maxSkew":           int64(1),
		"topologyKey":       "kubernetes.io/hostname",
		"whenUnsatisfiable": "ScheduleAnyway",
		"labelSelector":     map[string]any{"matchLabels": map[string]any{LabelRun: o.Run}},
	}}
	return spec
}

func objectMeta(name, run, fork string, owner *unstructured.Unstructured) map[string]any {
	labels := map[string]any{LabelManaged: Managed, LabelRun: run}
	if fork != "" {
		labels[LabelFork] = fork
	}
	m := map[string]any{"name": name, "labels": labels}
	if owner != nil {
		m["ownerReferences"] = []any{map[string]any{
			"apiVersion":         owner.GetAPIVersion(),
			"kind":               owner.GetKind(),
			"name":               owner.GetName(),
			"uid":                string(owner.GetUID()),
			"blockOwnerDeletion": true,
		}}
	}
	return m
}

// pod is a fork's Pod.
func pod(o PodOptions) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "Pod",
		"metadata":   objectMeta(o.Name, o.Run, o.Name, o.Owner),
		"spec":       podSpec(o),
	}}
}

// sandboxObject is a fork as an agent-sandbox Sandbox: the same pod template,
// one replica; the controller makes the pod (named as the Sandbox).
func sandboxObject(o PodOptions) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": sandboxGVR.GroupVersion().String(),
		"kind":       "Sandbox",
		"metadata":   objectMeta(o.Name, o.Run, o.Name, o.Owner),
		"spec": map[string]any{
			"podTemplate": map[string]any{
				"metadata": map[string]any{"labels": anyLabels(templateLabels(o))},
				"spec":     podSpec(o),
			},
		},
	}}
}

// anyLabels is labels as an unstructured object holds them.
func anyLabels(labels map[string]string) map[string]any {
	m := make(map[string]any, len(labels))
	for k, v := range labels {
		m[k] = v
	}
	return m
}

// templateLabels are the labels of a Sandbox's pod template, which
// agent-sandbox's controller copies onto the pod.
func templateLabels(o PodOptions) map[string]string {
	return map[string]string{LabelManaged: Managed, LabelRun: o.Run, LabelFork: o.Name}
}

// lease is a run's anchor: it owns everything else of the run, and its
// renewals say forkbomb is alive.
func lease(name, run, holder string, seconds int64, now string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "coordination.k8s.io/v1",
		"kind":       "Lease",
		"metadata":   objectMeta(name, run, "", nil),
		"spec": map[string]any{
			"holderIdentity":       holder,
			"leaseDurationSeconds": seconds,
			"renewTime":            now,
			"acquireTime":          now,
		},
	}}
}

// networkPolicy lets the run's pods talk to nothing — no ingress, and
// egress only to the model proxy when one is given. Whether it holds is
// the CNI's business: Probe reports whether this cluster enforces it.
func networkPolicy(name, run string, owner *unstructured.Unstructured, proxyCIDR string, proxyPort int) *unstructured.Unstructured {
	return networkPolicySelecting(name, run, owner, map[string]any{LabelRun: run}, proxyCIDR, proxyPort)
}

// networkPolicySelecting is networkPolicy for the pods of those labels.
func networkPolicySelecting(name, run string, owner *unstructured.Unstructured, labels map[string]any, proxyCIDR string, proxyPort int) *unstructured.Unstructured {
	egress := []any{}
	if proxyCIDR != "" && proxyPort > 0 {
		egress = append(egress, map[string]any{
			"to":    []any{map[string]any{"ipBlock": map[string]any{"cidr": proxyCIDR}}},
			"ports": []any{map[string]any{"protocol": "TCP", "port": int64(proxyPort)}},
		})
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "networking.k8s.io/v1",
		"kind":       "NetworkPolicy",
		"metadata":   objectMeta(name, run, "", owner),
		"spec": map[string]any{
			"podSelector": map[string]any{"matchLabels": labels},
			"policyTypes": []any{"Ingress", "Egress"},
			"ingress":     []any{},
			"egress":      egress,
		},
	}}
}

// objectName makes a DNS-1123 name of a workspace name (which
// home.ValidateID allows letters, digits, '-' and '_' in).
func objectName(prefix, name string) string {
	b := []byte(prefix + name)
	for i, c := range b {
		switch {
		case c >= 'A' && c <= 'Z':
			b[i] = c - 'A' + 'a'
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-':
		default:
			b[i] = '-'
		}
	}
	if len(b) > 63 {
		b = b[:63]
	}
	return string(b)
}
