package kube

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/forkbomb/forkbomb/internal/testutil"
)

// binDir is where scripts/k8s-cluster builds the pinned etcd and
// kube-apiserver (FORKBOMB_K8S_BIN, else its default cache).
func binDir() string {
	if d := os.Getenv("FORKBOMB_K8S_BIN"); d != "" {
		return d
	}
	return "/var/cache/forkbomb-k8s/v1.37.2/bin"
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// apiServer starts etcd and kube-apiserver — the same pinned binaries as
// the test cluster, as envtest does — on loopback ports of their own,
// stopped with the test. No kubelet, scheduler or garbage collector: pods
// are stored, never run.
func apiServer(t *testing.T) *rest.Config {
	t.Helper()
	bin := binDir()
	for _, b := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			testutil.SkipOrFail(t, "%s not built in %s (scripts/k8s-cluster build)", b, bin)
		}
	}
	dir := t.TempDir()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	os.WriteFile(filepath.Join(dir, "sa.key"), pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600)
	os.WriteFile(filepath.Join(dir, "sa.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o600)
	tok := make([]byte, 16)
	rand.Read(tok)
	token := hex.EncodeToString(tok)
	os.WriteFile(filepath.Join(dir, "tokens.csv"), []byte(token+`,admin,admin,"system:masters"`+"\n"), 0o600)

	etcdPort, peerPort, apiPort := freePort(t), freePort(t), freePort(t)
	start := func(name string, args ...string) {
		log, err := os.Create(filepath.Join(dir, name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(filepath.Join(bin, name), args...)
		cmd.Stdout, cmd.Stderr = log, log
		// the control plane dies with the test binary, even a killed one
		cmd.SysProcAttr = testutil.DieWithTest()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cmd.Process.Kill()
			cmd.Wait()
			log.Close()
			if t.Failed() {
				b, _ := os.ReadFile(log.Name())
				if len(b) > 4000 {
					b = b[len(b)-4000:]
				}
				t.Logf("%s log tail:\n%s", name, b)
			}
		})
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	start("etcd", "--data-dir", filepath.Join(dir, "etcd"), "--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL, "--initial-cluster", "default="+peerURL,
		"--unsafe-no-fsync")
	start("kube-apiserver", "--etcd-servers", etcdURL, "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
		"--secure-port", fmt.Sprint(apiPort), "--cert-dir", filepath.Join(dir, "certs"), "--endpoint-reconciler-type", "none",
		"--service-cluster-ip-range", "10.0.0.0/24", "--token-auth-file", filepath.Join(dir, "tokens.csv"),
		"--authorization-mode", "RBAC", "--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", filepath.Join(dir, "sa.pub"), "--service-account-signing-key-file", filepath.Join(dir, "sa.key"),
		// no service account controller runs: pods name none
		"--disable-admission-plugins", "ServiceAccount")
	cfg := &rest.Config{Host: fmt.Sprintf("https://127.0.0.1:%d", apiPort), BearerToken: token,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := hc.Get(cfg.Host + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("kube-apiserver not ready: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return cfg
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if strings.EqualFold(l, s) {
			return true
		}
	}
	return false
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

func splitDots(s string) []string { return strings.Split(s, ".") }

// installSandboxCRD installs kubernetes-sigs/agent-sandbox's own
// Sandbox CRD, as scripts/k8s-cluster build keeps it beside the pinned
// release's controller (no controller runs here: a Sandbox is stored,
// its pod never made).
func installSandboxCRD(t *testing.T, cfg *rest.Config) {
	t.Helper()
	path := filepath.Join(binDir(), "agent-sandbox-crds", "agents.x-k8s.io_sandboxes.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		testutil.SkipOrFail(t, "agent-sandbox's CRD is not built (scripts/k8s-cluster build): %v", err)
	}
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(b, &crd.Object); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if _, err := dyn.Resource(gvr).Create(context.Background(), crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for ok, _ := hasSandboxCRD(context.Background(), cfg); !ok; ok, _ = hasSandboxCRD(context.Background(), cfg) {
		if time.Now().After(deadline) {
			t.Fatal("the Sandbox CRD was never served")
		}
		time.Sleep(200 * time.Millisecond)
	}
}
