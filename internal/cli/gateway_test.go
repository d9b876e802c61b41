package cli_test

import (
	"encoding/json"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/forkbomb/forkbomb/internal/engine"
)

// TestGatewayScripts runs `forkbomb gateway` and `forkbomb run --engine
// hosted` end to end on loopback: a real gateway process, forkbomb's
// scripted model server as its upstream.
func TestGatewayScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/gateway",
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exitcode": exitcode,
			// scriptedmodel: start the scripted model server; $UPSTREAM,
			// $UPSTREAM_KEY name it.
			"scriptedmodel": func(ts *testscript.TestScript, neg bool, args []string) {
				key := "sk-upstream-" + strings.Repeat("u", 24)
				srv, err := engine.StartScripted(key, map[string][]engine.Step{
					"fixer": {
						{Tools: []engine.ToolCall{{Name: "shell", Input: map[string]any{"command": "sed -i s/-/+/ lib.sh; env | grep -c forkbomb_sk_"}}}},
						{Text: "Fixed."},
					},
				})
				if err != nil {
					ts.Fatalf("scripted model: %v", err)
				}
				ts.Defer(func() { srv.Close() })
				ts.Setenv("UPSTREAM", srv.URL)
				ts.Setenv("UPSTREAM_KEY", key)
			},
			// freeport VAR: a free loopback port.
			"freeport": func(ts *testscript.TestScript, neg bool, args []string) {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					ts.Fatalf("freeport: %v", err)
				}
				ts.Setenv(args[0], strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
				ln.Close()
			},
			// newworkspace URL: wait for the gateway, make a workspace;
			// $WS and $FORKBOMB_API_KEY name it.
			"newworkspace": func(ts *testscript.TestScript, neg bool, args []string) {
				deadline := time.Now().Add(60 * time.Second)
				for {
					resp, err := http.Post(args[0]+"/v1/workspaces", "application/json", nil)
					if err == nil {
						var w struct{ WorkspaceID, APIKey string }
						var m map[string]string
						json.NewDecoder(resp.Body).Decode(&m)
						resp.Body.Close()
						w.WorkspaceID, w.APIKey = m["workspace_id"], m["api_key"]
						if resp.StatusCode != 201 || w.APIKey == "" {
							ts.Fatalf("create workspace: %d", resp.StatusCode)
						}
						ts.Setenv("WS", w.WorkspaceID)
						ts.Setenv("FORKBOMB_API_KEY", w.APIKey)
						return
					}
					if time.Now().After(deadline) {
						ts.Fatalf("the gateway never answered: %v", err)
					}
					time.Sleep(50 * time.Millisecond)
				}
			},
			// nokey DIR: no file under DIR holds $FORKBOMB_API_KEY.
			"nokey": func(ts *testscript.TestScript, neg bool, args []string) {
				key := ts.Getenv("FORKBOMB_API_KEY")
				if key == "" {
					ts.Fatalf("nokey: no key to look for")
				}
				n := 0
				filepath.WalkDir(ts.MkAbs(args[0]), func(p string, d fs.DirEntry, err error) error {
					if err == nil && d.Type().IsRegular() {
						n++
						if data, _ := os.ReadFile(p); strings.Contains(string(data), key) {
							ts.Fatalf("LEAK: the gateway key is in %s", p)
						}
					}
					return nil
				})
				if n == 0 {
					ts.Fatalf("nokey: %s holds no files (the probe would see nothing)", args[0])
				}
			},
		},
		Setup: func(env *testscript.Env) error {
			env.Setenv("HOME", env.WorkDir+"/home")
			return os.MkdirAll(env.WorkDir+"/home", 0o755)
		},
	})
}
