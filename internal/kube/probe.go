package kube

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// ProbeReport is what a cluster enforces for forkbomb's pods, as far as
// the API can tell; `forkbomb sandbox --probe --backend kubernetes`
// prints it.
type ProbeReport struct {
	Server       string   `json:"server"`  // the API server's address
	Version      string   `json:"version"` // its gitVersion
	Namespace    string   `json:"namespace"`
	RuntimeClass string   `json:"runtime_class,omitempty"` // the one asked for
	RuntimeFound bool     `json:"runtime_class_found"`
	Runtimes     []string `json:"runtime_classes"` // every RuntimeClass of the cluster
	SandboxCRD   bool     `json:"sandbox_crd"`     // agents.x-k8s.io/v1beta1 Sandbox served
	// NetworkPolicy says whether the cluster's CNI enforces
	// NetworkPolicy: "enforced" or "not enforced" when NetworkProbe
	// measured it (a pod behind a deny-all policy reached, or not, a
	// listener), "unknown" when it was not measured.
	NetworkPolicy string `json:"network_policy"`
	// Registry is where the runs' tree images go (ProbeOptions.Registry).
	Registry string `json:"registry,omitempty"`
	// PodSecurity is the namespace's Pod Security Admission level
	// (enforce label), "" when none.
	PodSecurity string `json:"pod_security,omitempty"`
	// Limits: what bounds a pod besides its own requests and limits — the
	// namespace's LimitRanges and ResourceQuotas, and each node's
	// podPidsLimit (from the kubelet's configz, when readable; -1 none).
	LimitRanges    []string         `json:"limit_ranges"`
	ResourceQuotas []string         `json:"resource_quotas"`
	PodPidsLimit   map[string]int64 `json:"pod_pids_limit,omitempty"`
	// Walls is the backend of forkbomb's sandbox in a fork's pod (the
	// probe of that sandbox, run in a pod made as a fork's is, when
	// Measure): namespaces, landlock, none, or "unknown" (not measured);
	// WallLayers are its probe's layers there.
	Walls      string          `json:"walls"`
	WallLayers []sandbox.Layer `json:"wall_layers,omitempty"`
	Notes      []string        `json:"notes,omitempty"`
}

// ProbeOptions say which cluster to probe and how.
type ProbeOptions struct {
	Config       *rest.Config
	Namespace    string // default "default"
	RuntimeClass string
	Image        string // the probe pods' image; default DefaultImage
	// Measure: find out whether NetworkPolicy is enforced by trying it
	// (three short-lived pods), and which backend of forkbomb's sandbox
	// confines in a pod (one more).
	Measure bool
	// PodBin is forkbomb's binary for that pod (Options.PodBin).
	PodBin string
	// AgentCache is a file where FindAgent keeps what it found by the
	// image's content, and looks first; "" keeps nothing.
	AgentCache string
	// Registry is the run's (Options.Registry): the report then says
	// what a tree image changes of a pod's walls.
	Registry string
}

// Probe asks the cluster what it enforces.
func Probe(ctx context.Context, o ProbeOptions) (*ProbeReport, error) {
	cfg, namespace, runtimeClass := o.Config, o.Namespace, o.RuntimeClass
	if namespace == "" {
		namespace = "default"
	}
	if o.Image == "" {
		o.Image = DefaultImage
	}
	r := &ProbeReport{Server: cfg.Host, Namespace: namespace, RuntimeClass: runtimeClass, NetworkPolicy: "unknown", Walls: "unknown", Registry: o.Registry}
	var v struct {
		GitVersion string `json:"gitVersion"`
	}
	if err := getJSON(ctx, cfg, "/version", &v); err != nil {
		return nil, fmt.Errorf("probe the cluster at %s: %w", cfg.Host, err)
	}
	r.Version = v.GitVersion
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("probe the cluster: %w", err)
	}
	if rcs, err := dyn.Resource(rcGVR).List(ctx, metav1.ListOptions{}); err == nil {
		for _, rc := range rcs.Items {
			r.Runtimes = append(r.Runtimes, rc.GetName())
			if rc.GetName() == runtimeClass {
				r.RuntimeFound = true
			}
		}
	}
	if runtimeClass != "" && !r.RuntimeFound {
		r.Notes = append(r.Notes, fmt.Sprintf("runtime class %q is not in the cluster: pods asking for it will not start", runtimeClass))
	}
	if runtimeClass == "" {
		r.Notes = append(r.Notes, "no runtime class: pods run on the node's default runtime (runc: the node's kernel is the boundary, as for the local backend)")
	}
	if r.SandboxCRD, err = hasSandboxCRD(ctx, cfg); err != nil {
		r.Notes = append(r.Notes, fmt.Sprintf("cannot tell whether the cluster serves agent-sandbox's Sandbox: %v", err))
	}
	if ns, err := dyn.Resource(nsGVR).Get(ctx, namespace, metav1.GetOptions{}); err == nil {
		r.PodSecurity = ns.GetLabels()["pod-security.kubernetes.io/enforce"]
	}
	for _, l := range []struct {
		resource string
		into     *[]string
	}{{"limitranges", &r.LimitRanges}, {"resourcequotas", &r.ResourceQuotas}} {
		if list, err := dyn.Resource(podGVR.GroupVersion().WithResource(l.resource)).Namespace(namespace).List(ctx, metav1.ListOptions{}); err == nil {
			for _, i := range list.Items {
				*l.into = append(*l.into, i.GetName())
			}
		}
	}
	if nodes, err := dyn.Resource(podGVR.GroupVersion().WithResource("nodes")).List(ctx, metav1.ListOptions{}); err == nil {
		for _, n := range nodes.Items {
			var cz struct {
				KubeletConfig struct {
					PodPidsLimit *int64 `json:"podPidsLimit"`
				} `json:"kubeletconfig"`
			}
			if getJSON(ctx, cfg, "/api/v1/nodes/"+n.GetName()+"/proxy/configz", &cz) == nil && cz.KubeletConfig.PodPidsLimit != nil {
				if r.PodPidsLimit == nil {
					r.PodPidsLimit = map[string]int64{}
				}
				r.PodPidsLimit[n.GetName()] = *cz.KubeletConfig.PodPidsLimit
			}
		}
	}
	if o.Measure {
		enforced, err := measureNetworkPolicy(ctx, dyn, cfg, namespace, o.Image)
		if err != nil {
			r.Notes = append(r.Notes, "network policy not measured: "+err.Error())
		} else if enforced {
			r.NetworkPolicy = "enforced"
		} else {
			r.NetworkPolicy = "not enforced"
			r.Notes = append(r.Notes, "the CNI does not enforce NetworkPolicy: a fork's pod can reach the pod network and what it routes to")
		}
	}
	if o.Measure {
		bin := o.PodBin
		if bin == "" {
			bin, _ = os.Executable()
		}
		rep, err := measureWalls(ctx, dyn, cfg, namespace, o.Image, runtimeClass, bin)
		if err != nil {
			r.Notes = append(r.Notes, "forkbomb's sandbox in a pod not measured: "+err.Error())
		} else {
			r.Walls, r.WallLayers = string(rep.Mode), rep.Layers
			r.Notes = append(r.Notes, "in a pod, a fork's memory and CPUs are the pod's limits (its cgroup): forkbomb's sandbox there sets none of its own, whatever its cgroup line says")
			if rep.Mode != sandbox.ModeNamespaces && rep.Mode != sandbox.ModeLandlock {
				r.Notes = append(r.Notes, "forkbomb's sandbox confines nothing in a pod here: every fork would fail (never run with the pod's walls alone)")
			}
		}
	}
	return r, nil
}

// WriteText prints the report for a person.
func (r *ProbeReport) WriteText(w io.Writer) {
	fmt.Fprintf(w, "backend: kubernetes %s at %s, namespace %s\n", r.Version, r.Server, r.Namespace)
	rc := "none (the node's default)"
	if r.RuntimeClass != "" {
		rc = r.RuntimeClass + map[bool]string{true: " (present)", false: " (MISSING)"}[r.RuntimeFound]
	}
	fmt.Fprintf(w, "runtime class:   %s; cluster has: %s\n", rc, orNone(r.Runtimes))
	forks := "plain Pods"
	if r.SandboxCRD {
		forks = "Sandboxes"
	}
	fmt.Fprintf(w, "sandbox CRD:     %v (agents.x-k8s.io/v1beta1 Sandbox; forks are %s)\n", r.SandboxCRD, forks)
	fmt.Fprintf(w, "network policy:  %s\n", r.NetworkPolicy)
	fmt.Fprintf(w, "pod security:    %s\n", orNone([]string{r.PodSecurity}))
	fmt.Fprintf(w, "limit ranges:    %s; resource quotas: %s\n", orNone(r.LimitRanges), orNone(r.ResourceQuotas))
	if len(r.PodPidsLimit) == 0 {
		fmt.Fprintf(w, "pids per pod:    unknown (the kubelets' configz is not readable through the API; a kubelet on loopback never is)\n")
	}
	for n, l := range r.PodPidsLimit {
		fmt.Fprintf(w, "pids per pod:    %d on node %s (-1: none)\n", l, n)
	}
	fmt.Fprintf(w, "forkbomb's sandbox in each pod: %s\n", r.Walls)
	for _, l := range r.WallLayers {
		mark := "✓"
		if l.Status != "ok" {
			mark = "✗"
		}
		fmt.Fprintf(w, "  %s %-22s %s\n", mark, l.Name, l.Detail)
	}
	root := "read-only root filesystem"
	if r.Registry != "" {
		root = "a root filesystem that is the pod's own writable copy of the tree image (not read-only; the pod's user owns only the tree in it)"
	}
	fmt.Fprintf(w, "per pod, requested of the kubelet: no service-account token, non-root, no capabilities, no privilege escalation, seccomp RuntimeDefault, %s, memory and CPU limits, activeDeadlineSeconds\n", root)
	if r.Registry != "" {
		fmt.Fprintf(w, "note: --registry %s: each run's tree (its files and history to the base commit) is stored there, readable by whoever can pull from it; forkbomb deletes nothing there\n", r.Registry)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}

func orNone(s []string) string {
	j := strings.TrimSpace(strings.Join(s, ", "))
	if j == "" {
		return "none"
	}
	return j
}
