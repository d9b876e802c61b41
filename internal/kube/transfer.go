package kube

// What crosses between forkbomb and a fork's pod besides commands: the
// pid 1's tree, as a tar stream, and output that must arrive whole.

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// writeTar streams a pid 1's tree as tree/… : regular files, folders and
// symlinks (as links, never followed); anything else is left out. The
// tree is forkbomb's own snapshot of the repository, whose content is
// still hostile: every file is opened with O_NOFOLLOW and must be the
// regular file it was when listed. bin, when set, follows as podBinName
// (forkbomb's binary for the pod), so one exec brings both.
func writeTar(ctx context.Context, w io.Writer, root, bin string) error {
	return writeTree(ctx, w, root, bin, streamLayout)
}

// tarLayout is where a tree's stream puts what it holds, and whose it is.
type tarLayout struct {
	dir    string // before every name: "" (unpacked in the pod's /work) or "work/" (an image's root)
	owned  bool   // owners set: the tree the pod's user's, the rest root's; else the unpacker's
	binDir int64  // the mode of podBinName's folder
	// index, when set, is sent as the tree's .git/index in place of its
	// own: one with no stat data, so the same commit makes the same bytes
	index string
}

// An image layer's names that begin with whiteoutPrefix are deletions
// of the layers below, not files: a tree holding one cannot go as a layer.
const (
	whiteoutPrefix = ".wh."
	whiteoutOpaque = whiteoutPrefix + whiteoutPrefix + ".opq"
)

var errWhiteoutName = errors.New("a name an image layer reads as a deletion (.wh.…)")

var (
	streamLayout = tarLayout{binDir: 0o700}
	// imageLayout is the layer of a tree image (treeimage.go): /work and
	// forkbomb's binary root's, read-only to the pod's user; the tree its.
	imageLayout = tarLayout{dir: "work/", owned: true, binDir: 0o755}
)

func writeTree(ctx context.Context, w io.Writer, root, bin string, l tarLayout) error {
	tw := tar.NewWriter(w)
	hdr := func(h *tar.Header, tree bool) error {
		h.Name = l.dir + h.Name
		h.ModTime = time.Unix(0, 0)
		if l.owned && tree {
			h.Uid, h.Gid = agentUID, agentUID
		}
		return tw.WriteHeader(h)
	}
	treeHdr := func(h *tar.Header) error { return hdr(h, true) }
	if l.dir != "" {
		if err := hdr(&tar.Header{Typeflag: tar.TypeDir, Name: "", Mode: 0o755}, false); err != nil {
			return err
		}
		// opaque: nothing of the base image's /work shows through
		if err := hdr(&tar.Header{Typeflag: tar.TypeReg, Name: whiteoutOpaque, Mode: 0o644}, false); err != nil {
			return err
		}
	}
	// forkbomb's own scratch space in the pod (the editor's writes are
	// made there first), the pod's user's, beside the tree
	if err := hdr(&tar.Header{Typeflag: tar.TypeDir, Name: podScratchName + "/", Mode: 0o700}, true); err != nil {
		return err
	}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(filepath.Join("tree", rel))
		if l.owned && strings.HasPrefix(d.Name(), whiteoutPrefix) {
			return fmt.Errorf("%w: %s", errWhiteoutName, rel)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return hdr(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o755}, true)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return hdr(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777}, true)
		case d.Type().IsRegular() && l.index != "" && rel == filepath.Join(".git", "index"):
			st, err := os.Lstat(l.index)
			if err != nil {
				return err
			}
			return copyFile(tw, l.index, name, st, treeHdr)
		case d.Type().IsRegular():
			return copyFile(tw, p, name, info, treeHdr)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("send %s: %w", root, err)
	}
	if bin != "" {
		info, err := os.Stat(bin)
		if err != nil {
			return fmt.Errorf("send %s: %w", bin, err)
		}
		if err := hdr(&tar.Header{Typeflag: tar.TypeDir, Name: filepath.Dir(podBinName) + "/", Mode: l.binDir}, false); err != nil {
			return err
		}
		if err := copyFile(tw, bin, podBinName, info, func(h *tar.Header) error { return hdr(h, false) }); err != nil {
			return fmt.Errorf("send %s: %w", bin, err)
		}
	}
	return tw.Close()
}

func copyFile(tw *tar.Writer, p, name string, info fs.FileInfo, hdr func(*tar.Header) error) error {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", p, err)
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() || !os.SameFile(st, info) {
		return fmt.Errorf("%s changed while it was sent", p)
	}
	mode := int64(0o644)
	if st.Mode()&0o111 != 0 {
		mode = 0o755
	}
	if err := hdr(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: st.Size(), Mode: mode}); err != nil {
		return err
	}
	_, err = io.CopyN(tw, f, st.Size())
	return err
}

// The exec output of a command in a pod can arrive empty: on the test
// cluster (containerd 1.6 behind kubelet v1.37) about one exec in five
// delivers none of its stdout, with exit status 0 — SPDY and WebSocket
// alike, so the loss is the node's, not the client's. What forkbomb reads
// from a pod and must have whole (a patch) is therefore written to a file
// in the pod first, then sent with a trailer — its length and SHA-256 —
// and sent again until the trailer matches. The trailer is computed in
// the pod, so it proves the transfer, not the pod's honesty: the content
// is the fork's word either way.
const (
	outputFile    = "/tmp/.forkbomb-out"
	trailerPrefix = "\nFORKBOMB-OUTPUT "
	outputTries   = 8
)

// sendOutput prints the output file followed by its trailer.
const sendOutput = `f=` + outputFile + `; cat "$f" && printf '\nFORKBOMB-OUTPUT %s %s\n' "$(wc -c <"$f")" "$(sha256sum <"$f" | cut -d' ' -f1)"`

// outputRun is the shell text that runs script into the output file and
// sends it. The fork's processes write /tmp too: what is at the name may
// be its link (the script's output would land in the file it names), a
// FIFO (the redirect would wait) or a device. None runs while forkbomb
// reads (each command's processes are killed after it), so the name is
// removed and made afresh, O_EXCL (set -C), never opened through what the
// fork left.
func outputRun(script string) string {
	return `rm -f ` + outputFile + ` || exit 1; (set -C; exec >` + outputFile + ` || exit 1; set +C
` + script + `
) || exit $?; ` + sendOutput
}

// output runs script (with args as $1…) in the pod with its stdout going
// to the output file, then reads that file back whole (at most max bytes).
// It returns the script's exit status; a nil error means the bytes are
// exactly what the file held. The first exec both runs the script and
// sends the file (one exec where nothing is lost); only a lost or cut
// send is asked for again, never the script.
func (s *Store) output(ctx context.Context, pod, script string, args []string, max int) ([]byte, int, error) {
	return s.outputWith(ctx, pod, script, args, nil, max)
}

// outputWith is output with stdin given to the script's run (not to a
// resend).
func (s *Store) outputWith(ctx context.Context, pod, script string, args []string, stdin io.Reader, max int) ([]byte, int, error) {
	return s.outputFrom(ctx, pod, "", script, args, stdin, max)
}

// outputFrom is outputWith with shell text pre run first, in the exec's
// own shell, before anything of the output's (its file, its subshell).
func (s *Store) outputFrom(ctx context.Context, pod, pre, script string, args []string, stdin io.Reader, max int) ([]byte, int, error) {
	run := append([]string{"/bin/sh", "-c", pre + outputRun(script), "sh"}, args...)
	for try := 0; try <= outputTries; try++ {
		var out, errb limitedBuffer
		out.max, errb.max = max+256, 4<<10
		in := stdin
		if try > 0 {
			in = nil
		}
		code, err := s.run(ctx, pod, run, in, &out, &errb)
		if err != nil {
			// cut (its caller's cancel or deadline, its session's end
			// after it was sent): what the script started may still run
			// in the pod, as after a cut command. An exec refused (the
			// pod gone, access denied) started nothing.
			if ctx.Err() != nil || errors.Is(err, errSessionEnded) {
				s.killAll(ctx, pod)
			}
			return nil, -1, err
		}
		if try == 0 && code != 0 {
			return nil, code, fmt.Errorf("exit %d: %s", code, strings.TrimSpace(errb.String()))
		}
		if out.over {
			return nil, 0, fmt.Errorf("%w: over %d bytes", errTooBig, max)
		}
		if code != 0 {
			continue
		}
		if data, ok := checkTrailer(out.Bytes()); ok {
			if len(data) > max {
				return nil, 0, fmt.Errorf("%w: over %d bytes", errTooBig, max)
			}
			return bytes.Clone(data), 0, nil
		}
		run = []string{"/bin/sh", "-c", sendOutput}
	}
	return nil, 0, fmt.Errorf("read %s from %s: incomplete after %d tries", outputFile, pod, outputTries)
}

var errTooBig = fmt.Errorf("output too big")

// checkTrailer splits data from its trailer and reports whether the
// length and hash match.
func checkTrailer(b []byte) ([]byte, bool) {
	i := bytes.LastIndex(b, []byte(trailerPrefix))
	if i < 0 {
		return nil, false
	}
	data := b[:i]
	f := strings.Fields(string(b[i+len(trailerPrefix):]))
	if len(f) != 2 {
		return nil, false
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n != len(data) {
		return nil, false
	}
	sum := sha256.Sum256(data)
	return data, hex.EncodeToString(sum[:]) == f[1]
}
