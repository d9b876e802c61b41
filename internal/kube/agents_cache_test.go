package kube

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseImageRef(t *testing.T) {
	t.Parallel()
	d := "sha256:" + strings.Repeat("ab", 32)
	for _, c := range []struct {
		ref  string
		want imageRef
		ok   bool
	}{
		{"busybox", imageRef{"docker.io/library/busybox", "latest", ""}, true},
		{"busybox:1.36", imageRef{"docker.io/library/busybox", "1.36", ""}, true},
		{"me/tool:v1", imageRef{"docker.io/me/tool", "v1", ""}, true},
		{"forkbomb.local/agents:v2-abc", imageRef{"forkbomb.local/agents", "v2-abc", ""}, true},
		{"localhost:5000/x", imageRef{"localhost:5000/x", "latest", ""}, true},
		{"localhost/x:1", imageRef{"localhost/x", "1", ""}, true},
		{"reg.example:5000/a/b:c@" + d, imageRef{"reg.example:5000/a/b", "c", d}, true},
		{"a@" + d, imageRef{"docker.io/library/a", "", d}, true},
		{"a@sha256:short", imageRef{}, false},
		{"a@md5:" + strings.Repeat("0", 32), imageRef{}, false},
		{"", imageRef{}, false},
		{":tag", imageRef{}, false},
		{"a b", imageRef{}, false},
	} {
		got, ok := parseImageRef(c.ref)
		if ok != c.ok || ok && got != c.want {
			t.Errorf("parseImageRef(%q) = %+v, %v; want %+v, %v", c.ref, got, ok, c.want, c.ok)
		}
	}
}

// TestImageContent: an image is pinned by its own digest, else by the one
// name by digest of its repository every node holding its tag lists
// beside it; unknown where a node lists none, or two, where two nodes
// disagree, or where no node holds the tag.
func TestImageContent(t *testing.T) {
	t.Parallel()
	d1, d2 := "sha256:"+strings.Repeat("1", 64), "sha256:"+strings.Repeat("2", 64)
	node := func(images ...[]string) map[string]any {
		var list []map[string]any
		for _, names := range images {
			list = append(list, map[string]any{"names": names, "sizeBytes": 1})
		}
		return map[string]any{"status": map[string]any{"images": list}}
	}
	nodes := func(n ...map[string]any) []byte {
		data, err := json.Marshal(map[string]any{"items": n})
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	tagged := []string{"forkbomb.local/agents@" + d1, "forkbomb.local/agents:v2"}
	for _, c := range []struct {
		name, ref string
		nodes     []byte
		want      string
	}{
		{"a digested reference needs no node", "forkbomb.local/agents@" + d2, nil, "forkbomb.local/agents@" + d2},
		{"one node lists the digest", "forkbomb.local/agents:v2", nodes(node([]string{"other:1"}, tagged)), "forkbomb.local/agents@" + d1},
		{"the default registry's names", "busybox", nodes(node([]string{"docker.io/library/busybox@" + d2, "docker.io/library/busybox:latest"})), "docker.io/library/busybox@" + d2},
		{"two nodes agree", "forkbomb.local/agents:v2", nodes(node(tagged), node(tagged)), "forkbomb.local/agents@" + d1},
		{"two nodes differ", "forkbomb.local/agents:v2", nodes(node(tagged), node([]string{"forkbomb.local/agents@" + d2, "forkbomb.local/agents:v2"})), ""},
		{"two digests of one image", "forkbomb.local/agents:v2", nodes(node(append([]string{"forkbomb.local/agents@" + d2}, tagged...))), ""},
		{"a digest of another repository only", "forkbomb.local/agents:v2", nodes(node([]string{"import-2026@" + d1, "forkbomb.local/agents:v2"})), ""},
		{"no digest listed (an imported image)", "forkbomb.local/agents:v2", nodes(node([]string{"forkbomb.local/agents:v2"})), ""},
		{"one node lists none", "forkbomb.local/agents:v2", nodes(node(tagged), node([]string{"forkbomb.local/agents:v2"})), ""},
		{"another tag of the repository", "forkbomb.local/agents:v3", nodes(node(tagged)), ""},
		{"no node holds it", "forkbomb.local/agents:v2", nodes(node()), ""},
		{"a node list that is not one", "forkbomb.local/agents:v2", []byte("{"), ""},
	} {
		if got := imageContent(c.ref, c.nodes); got != c.want {
			t.Errorf("%s: imageContent(%q) = %q; want %q", c.name, c.ref, got, c.want)
		}
	}
}

// TestAgentCache: an answer kept is found by its key alone; the oldest go
// past the cache's size; an unreadable cache is no answer and is replaced
// by the next keep.
func TestAgentCache(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "home", "kube-agents.json")
	k := agentKey("sha256:x", "", "claude", "")
	if a := cachedAgent(p, k); a != nil {
		t.Fatalf("an empty cache answered %+v", a)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := keepAgent(p, k, &agentFound{Bin: "/usr/bin/claude", Version: "1.0", Found: t0}); err != nil {
		t.Fatal(err)
	}
	if a := cachedAgent(p, k); a == nil || a.Bin != "/usr/bin/claude" || a.Version != "1.0" {
		t.Fatalf("kept, then found: %+v", a)
	}
	for _, other := range []string{agentKey("sha256:y", "", "claude", ""), agentKey("sha256:x", "gvisor", "claude", ""),
		agentKey("sha256:x", "", "codex", ""), agentKey("sha256:x", "", "claude", "/opt/claude")} {
		if a := cachedAgent(p, other); a != nil {
			t.Errorf("key %q answered with another key's %+v", other, a)
		}
	}
	for i := range maxAgentCacheSize {
		if err := keepAgent(p, agentKey("sha256:n", "", "claude", string(rune('a'+i%26))+strings.Repeat("z", i)), &agentFound{Bin: "b", Found: t0.Add(time.Duration(i+1) * time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	if a := cachedAgent(p, k); a != nil {
		t.Errorf("the oldest answer is still kept past %d", maxAgentCacheSize)
	}
	if a := cachedAgent(p, agentKey("sha256:n", "", "claude", "a")); a == nil {
		t.Errorf("the oldest of the newer answers is gone too")
	}
	if err := os.WriteFile(p, []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if a := cachedAgent(p, k); a != nil {
		t.Errorf("an unreadable cache answered %+v", a)
	}
	if err := keepAgent(p, k, &agentFound{Bin: "/b", Found: t0}); err != nil {
		t.Fatalf("over an unreadable cache: %v", err)
	}
	if a := cachedAgent(p, k); a == nil || a.Bin != "/b" {
		t.Errorf("after replacing an unreadable cache: %+v", a)
	}
}
