package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// probeRun starts a probe's run: its name, its anchor (a Lease every pod
// of the probe is owned by), and end, which deletes the anchor and the
// run's pods — by label too: without a garbage collector (an API server
// alone) they would stay.
func probeRun(ctx context.Context, dyn dynamic.Interface, ns string) (string, *unstructured.Unstructured, func(), error) {
	run := "probe-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	now := metav1.NewMicroTime(time.Now()).UTC().Format(metav1.RFC3339Micro)
	anchor, err := dyn.Resource(leaseGVR).Namespace(ns).Create(ctx, lease(objectName("forkbomb-", run), run, "forkbomb-probe", 120, now), metav1.CreateOptions{})
	if err != nil {
		return "", nil, nil, fmt.Errorf("create the probe's anchor: %w", err)
	}
	end := func() {
		bg := metav1.DeletePropagationBackground
		zero := int64(0)
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		dyn.Resource(leaseGVR).Namespace(ns).Delete(dctx, anchor.GetName(), metav1.DeleteOptions{PropagationPolicy: &bg})
		dyn.Resource(podGVR).Namespace(ns).DeleteCollection(dctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{LabelSelector: LabelRun + "=" + run})
	}
	return run, anchor, end, nil
}

// measureNetworkPolicy finds out whether the CNI enforces NetworkPolicy
// by trying it: a listener pod, a client behind forkbomb's own deny-all
// policy (the one every run gets), and a control client without it that
// must reach the listener, or nothing is concluded. Everything is owned
// by one anchor, deleted at the end.
func measureNetworkPolicy(ctx context.Context, dyn dynamic.Interface, cfg *rest.Config, ns, image string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	run, anchor, end, err := probeRun(ctx, dyn, ns)
	if err != nil {
		return false, err
	}
	defer end()
	mk := func(name, role string, cmd ...string) error {
		o := PodOptions{Name: objectName("fb-", run+"-"+name), Run: run, Image: image, DeadlineSeconds: 120, Owner: anchor}
		p := pod(o)
		unstructured.SetNestedField(p.Object, role, "metadata", "labels", "forkbomb.dev/probe")
		cs, _, _ := unstructured.NestedSlice(p.Object, "spec", "containers")
		c := cs[0].(map[string]any)
		args := make([]any, len(cmd))
		for i, a := range cmd {
			args[i] = a
		}
		c["command"] = args
		unstructured.SetNestedSlice(p.Object, cs, "spec", "containers")
		_, err := dyn.Resource(podGVR).Namespace(ns).Create(ctx, p, metav1.CreateOptions{})
		return err
	}
	if err := mk("listener", "listener", "/bin/httpd", "-f", "-p", "8080", "-h", "/etc"); err != nil {
		return false, fmt.Errorf("start the probe's listener: %w", err)
	}
	s := &Store{o: Options{Namespace: ns, Config: cfg}, dyn: dyn}
	listener := objectName("fb-", run+"-listener")
	if _, err := s.waitRunning(ctx, listener, ""); err != nil {
		return false, err
	}
	u, err := dyn.Resource(podGVR).Namespace(ns).Get(ctx, listener, metav1.GetOptions{})
	if err != nil {
		return false, err
	}
	ip, _, _ := unstructured.NestedString(u.Object, "status", "podIP")
	if ip == "" {
		return false, fmt.Errorf("the probe's listener has no pod IP")
	}
	// The run's policy selects the run label; the control client gets a
	// run label of its own so that no policy selects it.
	// nc, not wget: a static busybox's wget resolves even an address
	// through glibc's NSS, which a minimal image lacks
	fetch := []string{"/bin/sh", "-c", `printf 'GET /passwd HTTP/1.0\r\n\r\n' | nc -w 5 "$0" 8080 | grep -q nobody`, ip}
	np := networkPolicy(objectName("forkbomb-", run), run, anchor, "", 0)
	unstructured.SetNestedField(np.Object, map[string]any{"forkbomb.dev/probe": "denied"}, "spec", "podSelector", "matchLabels")
	if _, err := dyn.Resource(netpolGVR).Namespace(ns).Create(ctx, np, metav1.CreateOptions{}); err != nil {
		return false, fmt.Errorf("create the probe's network policy: %w", err)
	}
	time.Sleep(2 * time.Second) // a CNI applies policies asynchronously
	if err := mk("control", "control", fetch...); err != nil {
		return false, err
	}
	if err := mk("denied", "denied", fetch...); err != nil {
		return false, err
	}
	control, err := s.waitExit(ctx, objectName("fb-", run+"-control"))
	if err != nil {
		return false, err
	}
	if control != 0 {
		return false, fmt.Errorf("the control pod could not reach the listener either (exit %d)", control)
	}
	denied, err := s.waitExit(ctx, objectName("fb-", run+"-denied"))
	if err != nil {
		return false, err
	}
	return denied != 0, nil
}

// waitExit waits for a pod's container to end and returns its exit code.
func (s *Store) waitExit(ctx context.Context, pod string) (int64, error) {
	for {
		u, err := s.dyn.Resource(podGVR).Namespace(s.o.Namespace).Get(ctx, pod, metav1.GetOptions{})
		if err == nil {
			cs, _, _ := unstructured.NestedSlice(u.Object, "status", "containerStatuses")
			for _, c := range cs {
				if m, ok := c.(map[string]any); ok {
					if code, ok, _ := unstructured.NestedInt64(m, "state", "terminated", "exitCode"); ok {
						return code, nil
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("pod %s did not finish: %w", pod, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// measureWalls finds out which backend of forkbomb's sandbox confines a
// fork's commands in a pod of this cluster: a pod made as a fork's is,
// sent forkbomb's binary, runs the sandbox's probe there (as each run
// does once per node).
func measureWalls(ctx context.Context, dyn dynamic.Interface, cfg *rest.Config, ns, image, runtimeClass, bin string) (*sandbox.ProbeReport, error) {
	var rep sandbox.ProbeReport
	err := inProbePod(ctx, dyn, cfg, ns, image, runtimeClass, bin, "walls", func(s *Store, pod string) error {
		out, code, err := s.probe(ctx, pod)
		if err != nil {
			return fmt.Errorf("forkbomb's sandbox's probe in a pod: exit %d: %w", code, err)
		}
		if err := json.Unmarshal(out, &rep); err != nil {
			return fmt.Errorf("forkbomb's sandbox's probe in a pod: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &rep, nil
}

// inProbePod runs f with a pod made as a fork's is — running, forkbomb's
// binary (bin) sent into it, the tree's folder made — within two minutes.
// Everything is owned by one anchor, deleted at the end.
func inProbePod(ctx context.Context, dyn dynamic.Interface, cfg *rest.Config, ns, image, runtimeClass, bin, what string, f func(s *Store, pod string) error) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	run, anchor, end, err := probeRun(ctx, dyn, ns)
	if err != nil {
		return err
	}
	defer end()
	name := objectName("fb-", run+"-"+what)
	p := pod(PodOptions{Name: name, Run: run, Image: image, RuntimeClass: runtimeClass, DeadlineSeconds: 120, Owner: anchor})
	if _, err := dyn.Resource(podGVR).Namespace(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("start the probe's pod: %w", err)
	}
	s := &Store{o: Options{Namespace: ns, Config: cfg}, dyn: dyn}
	if _, err := s.waitRunning(ctx, name, ""); err != nil {
		return err
	}
	if code, err := s.stream(ctx, name, []string{"mkdir", "-p", "/work/" + filepath.Dir(podBinName), podRoot}, nil, nil, nil); err != nil || code != 0 {
		return fmt.Errorf("prepare the probe's pod: exit %d %v", code, err)
	}
	if err := s.sendFile(ctx, name, bin, podBin); err != nil {
		return err
	}
	return f(s, name)
}
