package kube

import (
	"os"
	"testing"

	"github.com/forkbomb/forkbomb/internal/podrun"
	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/tunnel"
)

func TestMain(m *testing.M) {
	if sandbox.IsInit() { // the judge's test runs re-execute this binary
		sandbox.InitMain()
	}
	if podrun.IsRunner() { // every pod's command runs under this binary as its runner
		podrun.Main()
	}
	if podrun.IsServer() { // and its session's server
		podrun.ServeMain()
	}
	if tunnel.IsForwarder() { // TestClusterTunnel's pods run this binary as their forwarder
		tunnel.ForwarderMain()
	}
	if args := os.Getenv("FORKBOMB_KUBE_CHILD"); args != "" { // TestClusterKill9's forkbomb
		os.Exit(kubeChild(args))
	}
	code := m.Run()
	if podBinDir != "" {
		os.RemoveAll(podBinDir)
	}
	os.Exit(code)
}
