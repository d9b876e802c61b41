package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/forkbomb/forkbomb/internal/atomicfile"
)

// The agent cache (ProbeOptions.AgentCache, $FORKBOMB_HOME/kube-agents.json)
// keeps what FindAgent found in an image, by the image's content: its
// digest, given in the reference (name@sha256:…) or read from the nodes'
// status (the name by digest the kubelet lists beside the tag). The
// answer is for that digest alone: FindAgent's pod runs the image by it,
// and so do the forks' pods (FindAgent returns it). A tag whose content
// the nodes do not name by one digest is not cached: a tag can be moved to
// other content, and the version found is what the canary's result is kept
// for.

// agentCacheFile is kube-agents.json's content.
type agentCacheFile struct {
	Version int                    `json:"version"` // of this format: 1
	Agents  map[string]*agentFound `json:"agents"`  // by agentKey
}

// agentFound is one answer of FindAgent.
type agentFound struct {
	Bin     string    `json:"bin"`
	Version string    `json:"version"`
	Found   time.Time `json:"found"`
}

const (
	maxAgentCache     = 1 << 20
	maxAgentCacheSize = 256 // answers kept; the oldest go first
)

// agentKey names one answer: the image's content (its digest), the
// runtime class the pod ran under, the CLI's name and the path given for
// it, and how it was looked for (findScript).
func agentKey(content, runtimeClass, name, given string) string {
	if r, ok := parseImageRef(content); ok && r.digest != "" {
		content = r.digest
	}
	script := sha256.Sum256([]byte(findScript))
	return strings.Join([]string{content, runtimeClass, name, given, hex.EncodeToString(script[:8])}, "\x00")
}

// imageRef is an image reference taken apart as the container runtime
// reads it: "busybox" is docker.io/library/busybox:latest.
type imageRef struct {
	repo, tag, digest string
}

// parseImageRef takes ref apart; ok false for a reference it cannot read.
func parseImageRef(ref string) (r imageRef, ok bool) {
	if ref == "" || strings.ContainsAny(ref, " \t\n") {
		return r, false
	}
	name := ref
	if i := strings.Index(name, "@"); i >= 0 {
		name, r.digest = name[:i], name[i+1:]
		if !strings.HasPrefix(r.digest, "sha256:") || len(r.digest) != len("sha256:")+64 {
			return r, false
		}
	}
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name, r.tag = name[:i], name[i+1:]
	}
	if name == "" {
		return r, false
	}
	first, _, found := strings.Cut(name, "/")
	if !found || !strings.ContainsAny(first, ".:") && first != "localhost" {
		if !found {
			name = "library/" + name
		}
		name = "docker.io/" + name
	}
	r.repo = name
	if r.tag == "" && r.digest == "" {
		r.tag = "latest"
	}
	return r, true
}

// imageContent names what image ref holds, by digest, as a reference
// that pins it (repo@sha256:…): ref itself where it has a digest, else the
// one name by digest every node holding the tag lists beside it (nodes is
// the cluster's node list as served, JSON). "" where that is not known: no
// node names the tag's content by one digest, or two nodes hold different
// content under it. A node whose status does not list the tag (the
// kubelet lists only the largest images) is not seen: the pinned
// reference is what keeps a pod from running other content there.
func imageContent(ref string, nodes []byte) string {
	r, ok := parseImageRef(ref)
	if !ok {
		return ""
	}
	if r.digest != "" {
		return ref
	}
	var list struct {
		Items []struct {
			Status struct {
				Images []struct {
					Names []string `json:"names"`
				} `json:"images"`
			} `json:"status"`
		} `json:"items"`
	}
	if json.Unmarshal(nodes, &list) != nil {
		return ""
	}
	tagged := r.repo + ":" + r.tag
	pinned := ""
	for _, n := range list.Items {
		for _, img := range n.Status.Images {
			if !slices.ContainsFunc(img.Names, func(s string) bool {
				o, ok := parseImageRef(s)
				return ok && o.digest == "" && o.repo+":"+o.tag == tagged
			}) {
				continue
			}
			var digested []string
			for _, s := range img.Names {
				if o, ok := parseImageRef(s); ok && o.digest != "" && o.repo == r.repo {
					digested = append(digested, o.repo+"@"+o.digest)
				}
			}
			slices.Sort(digested)
			digested = slices.Compact(digested)
			if len(digested) != 1 || pinned != "" && digested[0] != pinned {
				return ""
			}
			pinned = digested[0]
		}
	}
	return pinned
}

// nodeImageContent is imageContent with the cluster's nodes listed now;
// "" where they cannot be.
func nodeImageContent(ctx context.Context, dyn dynamic.Interface, ref string) string {
	if r, ok := parseImageRef(ref); ok && r.digest != "" {
		return ref
	}
	list, err := dyn.Resource(podGVR.GroupVersion().WithResource("nodes")).List(ctx, metav1.ListOptions{})
	if err != nil {
		return ""
	}
	data, err := list.MarshalJSON()
	if err != nil {
		return ""
	}
	return imageContent(ref, data)
}

// cachedAgent is the answer kept at path for key, if any. A cache that
// cannot be read is no answer: FindAgent looks in a pod again.
func cachedAgent(path, key string) *agentFound {
	data, err := atomicfile.Read(path, maxAgentCache)
	if err != nil || data == nil {
		return nil
	}
	var c agentCacheFile
	if json.Unmarshal(data, &c) != nil || c.Version != 1 {
		return nil
	}
	return c.Agents[key]
}

// keepAgent adds an answer to the cache at path, dropping the oldest past
// maxAgentCacheSize; a cache that is not JSON of this format is replaced
// (one that cannot be read at all, a link or a folder at its path, is an
// error, and every run looks in a pod again).
func keepAgent(path, key string, a *agentFound) error {
	err := atomicfile.Update(path, maxAgentCache, func(old []byte) ([]byte, error) {
		c := agentCacheFile{Version: 1}
		if json.Unmarshal(old, &c) != nil || c.Version != 1 || c.Agents == nil {
			c = agentCacheFile{Version: 1, Agents: map[string]*agentFound{}}
		}
		c.Agents[key] = a
		for len(c.Agents) > maxAgentCacheSize {
			oldest := ""
			for k, v := range c.Agents {
				if oldest == "" || v.Found.Before(c.Agents[oldest].Found) {
					oldest = k
				}
			}
			delete(c.Agents, oldest)
		}
		data, err := json.MarshalIndent(c, "", "  ")
		return append(data, '\n'), err
	})
	if err != nil {
		return fmt.Errorf("the cluster's agent cache: %w", err)
	}
	return nil
}
