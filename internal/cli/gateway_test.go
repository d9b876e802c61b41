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
			// gatewaycost RUNS URL GRANTED: the one run under RUNS
			// records, for each fork, a cost that is the gateway's
			// gateway_usage charge, not zero in all, and the forks' costs add up to
			// exactly what the workspace's balance fell from GRANTED
			// micro-dollars, as the gateway says it now (the balance
			// event says the same).
			"gatewaycost": func(ts *testscript.TestScript, neg bool, args []string) {
				gatewayCost(ts, args[0], args[1], args[2])
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
			noExitSleep(env)
			return os.MkdirAll(env.WorkDir+"/home", 0o755)
		},
	})
}

func gatewayCost(ts *testscript.TestScript, runs, url, granted string) {
	dirs, _ := filepath.Glob(filepath.Join(ts.MkAbs(runs), "*", "run.json"))
	if len(dirs) != 1 {
		ts.Fatalf("gatewaycost: %d runs under %s", len(dirs), runs)
	}
	var run struct {
		Cost  int64 `json:"cost_micro_usd"`
		Forks []struct {
			N    int   `json:"n"`
			Cost int64 `json:"cost_micro_usd"`
		} `json:"fork_results"`
	}
	data, err := os.ReadFile(dirs[0])
	ts.Check(err)
	ts.Check(json.Unmarshal(data, &run))
	events, err := os.ReadFile(filepath.Join(filepath.Dir(dirs[0]), "events.jsonl"))
	ts.Check(err)
	charged := map[int]int64{}
	var balanceSaid int64 = -1
	for _, line := range strings.Split(strings.TrimSpace(string(events)), "\n") {
		var ev struct {
			Type string
			Fork int
			Data struct {
				Source  string
				Charged int64 `json:"charged_micro_usd"`
				Balance int64 `json:"balance_micro_usd"`
			}
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Type == "gateway_usage" && ev.Data.Source == "gateway" {
			charged[ev.Fork] = ev.Data.Charged
			balanceSaid = ev.Data.Balance
		}
	}
	req, _ := http.NewRequest("GET", url+"/v1/balance", nil)
	req.Header.Set("Authorization", "Bearer "+ts.Getenv("FORKBOMB_API_KEY"))
	resp, err := http.DefaultClient.Do(req)
	ts.Check(err)
	var b struct {
		Balance int64 `json:"balance_micro_usd"`
	}
	json.NewDecoder(resp.Body).Decode(&b)
	resp.Body.Close()
	start, _ := strconv.ParseInt(granted, 10, 64)
	// A losing fork may be stopped before its first call: every fork's
	// cost is its charge, and some fork's is not zero.
	var sum int64
	for _, f := range run.Forks {
		c, ok := charged[f.N]
		if !ok || f.Cost != c {
			ts.Fatalf("gatewaycost: fork %d records cost %d, the gateway charged %d (event: %v)", f.N, f.Cost, c, ok)
		}
		sum += f.Cost
	}
	if len(run.Forks) == 0 || sum <= 0 || sum != run.Cost || sum != start-b.Balance || balanceSaid != b.Balance {
		ts.Fatalf("gatewaycost: forks cost %d, the run %d; the balance fell %d to %d (the event said %d)",
			sum, run.Cost, start-b.Balance, b.Balance, balanceSaid)
	}
	ts.Logf("gatewaycost: %d forks, %d micro-dollars, balance %d", len(run.Forks), sum, b.Balance)
}
