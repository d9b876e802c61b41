package kube

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/client-go/dynamic"
)

// ErrAgentNotInImage: the forks' image holds no agent CLI of that name
// (nor at the path given).
var ErrAgentNotInImage = errors.New("agent CLI not in the image")

// agentTimeout bounds `CLI --version` in the pod.
const agentTimeout = time.Minute

// findScript finds the CLI ($2, a path in the image, else $1 on the
// runner's PATH), prints its path with links resolved, then runs its
// --version. 127: not there; 126: not an executable file.
const findScript = `p=$2
[ -n "$p" ] || p=$(command -v "$1") || exit 127
p=$(readlink -f "$p") || exit 127
[ -f "$p" ] && [ -x "$p" ] || { echo "$p"; exit 126; }
echo "$p"
exec "$p" --version </dev/null`

// FindAgent finds an engine's agent CLI in the forks' image and its
// version, the way a fork would run it: in a pod made as a fork's is,
// inside forkbomb's sandbox there, offline. given is a path in the image
// (--agent-bin); "" looks name up on the runner's PATH
// (/usr/local/bin:/usr/bin:/bin). It costs one pod's start, unless
// o.AgentCache holds the answer for the image's content (see the agent
// cache): a tag whose digest the nodes do not list is looked for anew
// each time. image is the reference the answer holds for: the image by
// its digest where that is known (the forks' pods should run it, so that
// the CLI they run is the one found), else o.Image.
func FindAgent(ctx context.Context, o ProbeOptions, name, given string) (bin, version, image string, err error) {
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if o.Image == "" {
		o.Image = DefaultImage
	}
	podBin := o.PodBin
	if podBin == "" {
		if podBin, err = os.Executable(); err != nil {
			return "", "", "", err
		}
	}
	dyn, err := dynamic.NewForConfig(o.Config)
	if err != nil {
		return "", "", "", err
	}
	key := ""
	if pinned := nodeImageContent(ctx, dyn, o.Image); pinned != "" {
		o.Image = pinned
		if o.AgentCache != "" {
			key = agentKey(pinned, o.RuntimeClass, name, given)
			if a := cachedAgent(o.AgentCache, key); a != nil {
				return a.Bin, a.Version, o.Image, nil
			}
		}
	}
	err = inProbePod(ctx, dyn, o.Config, o.Namespace, o.Image, o.RuntimeClass, podBin, "agent", func(s *Store, pod string) error {
		out, code, err := s.probe(ctx, pod)
		mode, _, err := probeResult(out, code, err)
		if err != nil {
			return err
		}
		line, err := confined(mode, agentTimeout, findScript, name, given)
		if err != nil {
			return err
		}
		// the script's own exit status: output() takes only a whole
		// answer, and a missing CLI is an answer
		var b limitedBuffer
		b.max = 4 << 10
		code, err = s.stream(ctx, pod, append(runnerEnv(), "/bin/sh", "-c", line), nil, &b, &b)
		if err != nil {
			return err
		}
		lines := strings.SplitN(strings.TrimSpace(b.String()), "\n", 3)
		where := name + " on the pod's PATH"
		if given != "" {
			where = given
		}
		switch {
		case code == 127:
			return fmt.Errorf("%w: %s is not in image %s (give an image that holds it with --image, or its path there with --agent-bin)", ErrAgentNotInImage, where, o.Image)
		case code == 126:
			return fmt.Errorf("%w: %s (%s) is not an executable file in image %s", ErrAgentNotInImage, where, lines[0], o.Image)
		case code != 0 || len(lines) < 2:
			return fmt.Errorf("%s --version in image %s: exit %d: %q", where, o.Image, code, truncate(b.String(), 300))
		}
		bin, version = lines[0], truncate(strings.TrimSpace(lines[1]), 200)
		return nil
	})
	if err != nil {
		return "", "", "", fmt.Errorf("the %s CLI in the forks' image: %w", name, err)
	}
	if key != "" {
		// a cache that cannot be written costs the next run a pod's start
		_ = keepAgent(o.AgentCache, key, &agentFound{Bin: bin, Version: version, Found: time.Now().UTC()})
	}
	return bin, version, o.Image, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
