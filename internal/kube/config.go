package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// LoadConfig reads the cluster's address and credentials from the usual
// places: $KUBECONFIG, ~/.kube/config, or the in-cluster service account;
// context, when set, picks a kubeconfig context. The credentials stay in
// this process: nothing of them reaches a pod.
func LoadConfig(context string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	over := &clientcmd.ConfigOverrides{CurrentContext: context}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, over).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	cfg.UserAgent = "forkbomb"
	return cfg, nil
}

// getJSON reads one API path into out, bounded (1 MiB, 30 s). Discovery
// is done this way rather than with client-go's discovery package, which
// links every built-in API type into forkbomb (and so into every sandbox
// start, which re-executes this binary).
func getJSON(ctx context.Context, cfg *rest.Config, p string, out any) error {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return err
	}
	u.Path = path.Join(u.Path, p)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode == http.StatusNotFound {
		return fmt.Errorf("GET %s: %w", p, errNotServed)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", p, resp.Status)
	}
	return json.Unmarshal(body, out)
}

// errNotServed: the API server has no such path (a group or version it
// does not serve).
var errNotServed = errors.New("not served (404)")

// hasSandboxPools reports whether the cluster serves agent-sandbox's
// SandboxTemplate, SandboxWarmPool and SandboxClaim (kept_sandbox.go).
func hasSandboxPools(ctx context.Context, cfg *rest.Config) (bool, error) {
	return serves(ctx, cfg, sandboxPoolGVR.GroupVersion(), sandboxTemplateGVR.Resource, sandboxPoolGVR.Resource, sandboxClaimGVR.Resource)
}

// hasSandboxCRD reports whether the cluster serves agent-sandbox's
// Sandbox (sandboxGVR); an error where the API server could not say.
func hasSandboxCRD(ctx context.Context, cfg *rest.Config) (bool, error) {
	return serves(ctx, cfg, sandboxGVR.GroupVersion(), sandboxGVR.Resource)
}

// serves reports whether the cluster serves each of resources in gv, from
// one read of its discovery.
func serves(ctx context.Context, cfg *rest.Config, gv schema.GroupVersion, resources ...string) (bool, error) {
	var rl struct {
		Resources []struct {
			Name string `json:"name"`
		} `json:"resources"`
	}
	if err := getJSON(ctx, cfg, "/apis/"+gv.String(), &rl); err != nil {
		if errors.Is(err, errNotServed) {
			return false, nil
		}
		return false, err
	}
	served := map[string]bool{}
	for _, r := range rl.Resources {
		served[r.Name] = true
	}
	for _, want := range resources {
		if !served[want] {
			return false, nil
		}
	}
	return true, nil
}
