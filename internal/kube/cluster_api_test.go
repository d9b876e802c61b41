package kube

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/run"
)

// apiScripts are the scripted model's personas for the api engine on the
// cluster. editonly fixes the value with the editor alone (its pod never
// starts: the patch is the local fork's); editfirst edits before its
// first command, which must see the edits in the pod; podfixer runs a command first
// (its pod starts), dumps what the pod's processes can see of their
// environment into the tree — the attack: the key must not be there —,
// is refused a symlink, then edits, makes and lists folders in the pod;
// idler does nothing.
func apiScripts() map[string][]engine.Step {
	ed := func(in map[string]any) engine.Step {
		return engine.Step{Tools: []engine.ToolCall{{Name: "editor", Input: in}}}
	}
	sh := func(c string) engine.Step {
		return engine.Step{Tools: []engine.ToolCall{{Name: "shell", Input: map[string]any{"command": c}}}}
	}
	return map[string][]engine.Step{
		"editonly": {
			ed(map[string]any{"command": "view", "path": "value"}),
			ed(map[string]any{"command": "str_replace", "path": "value", "old_str": "1", "new_str": "2"}),
			{Text: "Fixed."},
		},
		"editfirst": {
			ed(map[string]any{"command": "str_replace", "path": "value", "old_str": "1", "new_str": "2"}),
			ed(map[string]any{"command": "create", "path": "early/new.txt", "file_text": "before the pod\n"}),
			sh("cat value early/new.txt"),
			{Text: "Fixed."},
		},
		"podfixer": {
			sh(`ln -s /etc/passwd link; { env; tr '\0' '\n' </proc/1/environ; tr '\0' '\n' </proc/self/environ; } > env-dump 2>&1; cat value; hostname`),
			ed(map[string]any{"command": "view", "path": "link"}),
			ed(map[string]any{"command": "str_replace", "path": "value", "old_str": "1", "new_str": "2"}),
			ed(map[string]any{"command": "create", "path": "sub/dir/new.txt", "file_text": "made by the editor\n"}),
			ed(map[string]any{"command": "view", "path": "sub"}),
			ed(map[string]any{"command": "view", "path": "/work/tree/sub/dir/new.txt"}),
			sh("cat sub/dir/new.txt value"),
			{Text: "Fixed."},
		},
		"idler": {{Text: "Nothing to do."}},
	}
}

// TestClusterAPIRace: the api engine races on the cluster — its loop and
// key here, its shell commands and editor calls in each fork's pod — and
// a fork wins whose patch was made by the editor in the pod. The key is in
// no pod object the API holds (read back while the pods run), in nothing
// a pod's process can read of its environment (dumped into the fork's
// patch, which holds the command's HOME: the control that the dump
// worked; its HOME forkbomb's sandbox's, not the pod's), and in no file of the record; each fork's model calls are in
// events.jsonl as on the local backend. With the tree sent, and with a
// tree image (the editor's writes then go through the image's scratch
// folder).
func TestClusterAPIRace(t *testing.T) {
	t.Parallel() // namespaces of their own; their waits are the cluster's
	inEachTreeMode(t, clusterAPIRace, false)
}

func clusterAPIRace(t *testing.T, cfg *rest.Config, ns string, ko Options) {
	s := openStore(t, cfg, ko)
	key := "sk-kube-scripted-" + strings.Repeat("k", 24)
	srv, err := engine.StartScripted(key, apiScripts())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	eng, err := engine.New(context.Background(), "api", engine.Settings{Provider: "anthropic", Model: "scripted", APIKey: key, BaseURL: srv.URL, MaxTurns: 12})
	if err != nil {
		t.Fatal(err)
	}
	o := raceOptions(t, s, fixture(t), "", 4)
	o.Engine, o.All = eng, true
	o.Prompts = []string{"[persona: editonly]", "[persona: podfixer]", "[persona: idler]", "[persona: editfirst]"}

	// Read every version of every pod of the run back from the API while
	// the race runs: a watch, started before the race, gets each one (a
	// pod made and deleted between two reads of a list would be missed).
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[string][]string{} // pod name → each version of its object, as JSON
	watching := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for first := true; ctx.Err() == nil; first = false {
			// (re)started with no resource version: every pod there is comes
			// first, as added, so nothing is lost when a watch ends early
			w, err := dyn.Resource(podGVR).Namespace(ns).Watch(ctx, metav1.ListOptions{LabelSelector: LabelManaged + "=" + Managed})
			if first {
				close(watching)
			}
			if err != nil {
				select {
				case <-ctx.Done():
				case <-time.After(200 * time.Millisecond):
				}
				continue
			}
			for ev := range w.ResultChan() {
				if p, ok := ev.Object.(*unstructured.Unstructured); ok && (ev.Type == watch.Added || ev.Type == watch.Modified || ev.Type == watch.Deleted) {
					b, _ := json.Marshal(p.Object)
					mu.Lock()
					seen[p.GetName()] = append(seen[p.GetName()], string(b))
					mu.Unlock()
				}
			}
			w.Stop()
		}
	}()
	<-watching
	r, dir, err := run.Race(context.Background(), o)
	stop()
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != event.RunWon || r.Winner == nil || *r.Winner == 2 {
		t.Fatalf("status %s, winner %v; forks %+v", r.Status, r.Winner, r.Fork)
	}
	for n, want := range []string{"pass", "pass", "fail", "pass"} {
		if string(r.Fork[n].Verdict) != want {
			t.Errorf("fork %d: verdict %q (%s), want %s", n, r.Fork[n].Verdict, r.Fork[n].Reason, want)
		}
	}
	log1, _ := os.ReadFile(filepath.Join(dir, "forks", "1", "agent.log"))
	for _, want := range []string{"refused: the path goes through a symlink", "dir/", "made by the editor\n2\n", "fb-"} {
		if !strings.Contains(string(log1), want) {
			t.Errorf("fork 1's log lacks %q:\n%s", want, log1)
		}
	}
	patch1, _ := os.ReadFile(filepath.Join(dir, "forks", "1", "patch"))
	for _, want := range []string{"+++ b/sub/dir/new.txt", "+2", "+++ b/env-dump", "\n+HOME=", "\n+PWD=" + podRoot + "\n"} {
		if !strings.Contains(string(patch1), want) {
			t.Errorf("fork 1's patch (made in its pod) lacks %q:\n%s", want, patch1)
		}
	}
	// The command ran inside forkbomb's sandbox in the pod: its HOME is
	// the sandbox's private one, not the pod's.
	if strings.Contains(string(patch1), "HOME=/tmp/home\n") {
		t.Errorf("fork 1's command saw the pod's own HOME (not forkbomb's sandbox):\n%s", patch1)
	}
	log3, _ := os.ReadFile(filepath.Join(dir, "forks", "3", "agent.log"))
	if !strings.Contains(string(log3), "2\nbefore the pod\n\n(exit 0)") {
		t.Errorf("fork 3's command did not see its editor's earlier writes in the pod:\n%s", log3)
	}
	patch0, _ := os.ReadFile(filepath.Join(dir, "forks", "0", "patch"))
	if !strings.Contains(string(patch0), "+2") {
		t.Errorf("fork 0's patch (the editor's alone, its pod never started) lacks the fix:\n%s", patch0)
	}
	podImage := DefaultImage
	if ko.Registry != "" {
		podImage = ko.Registry + "/" + treeRepo + "@sha256:"
	}
	mu.Lock()
	for _, f := range []string{"f1", "f3"} { // the forks that ran a command in their pod
		if _, ok := seen[objectName("fb-", "run-"+r.ID+"-"+f)]; !ok {
			t.Errorf("control: fork %s's pod was never read back from the API (seen %d pods)", f, len(seen))
		}
	}
	for name, objs := range seen {
		for _, obj := range objs {
			if strings.Contains(obj, key) {
				t.Errorf("LEAK: the key is in pod %s as the API holds it", name)
			}
			if !strings.Contains(obj, podImage) {
				t.Errorf("control: pod %s read back without its spec: %.200s", name, obj)
			}
		}
	}
	mu.Unlock()
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if data, _ := os.ReadFile(p); err == nil && !d.IsDir() && strings.Contains(string(data), key) {
			t.Errorf("LEAK: the key is in %s", p)
		}
		return nil
	})
	if n := modelResponses(t, filepath.Join(dir, "events.jsonl"), 1); n < 8 {
		t.Errorf("events.jsonl holds %d model responses of fork 1, want its 8 turns", n)
	}
	waitNothingLeft(t, cfg, ns, time.Minute)
}

// modelResponses counts a fork's model_response events in a record.
func modelResponses(t *testing.T, events string, fork int) int {
	f, err := os.Open(events)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e struct {
			Kind event.Kind `json:"type"`
			Fork *int       `json:"fork"`
		}
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Kind == event.ModelResponse && e.Fork != nil && *e.Fork == fork {
			n++
		}
	}
	return n
}
