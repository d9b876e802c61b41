package kube

// A fork's files for an in-process tool (the api engine's editor), served
// from its pod over the API's exec: the model's turns run in forkbomb,
// its edits land in the pod's tree, its shell commands run there too.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/forkbomb/forkbomb/internal/layerfs"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// podRoot is where a command in a fork's pod finds the fork's tree (its
// cwd): the root the editor's absolute paths are read against.
const podRoot = "/work/tree"

// Bounds of one editor call in a pod.
const (
	filesTimeout  = 2 * time.Minute
	maxListOutput = 16 << 20
	writeTries    = 3
)

// Pod-side status codes of filesScript; 0 is success.
const (
	stNotExist   = 10
	stSymlink    = 11
	stNotRegular = 12
	stTooBig     = 13
	stIsDir      = 14
	stBadSum     = 15
)

// filesScript serves one editor call in the pod: $1 the operation, $2
// the path (relative, already checked by the editor: no "..", no .git),
// then the operation's own arguments. Every component is checked not to
// be a link before the next is used, as layerfs does on this machine —
// inside the pod that protects no host file (the pod holds none), it keeps
// the editor's semantics the same on both backends. No agent process runs
// while the editor does (the pod's processes are killed after each
// command, and the api engine runs one tool at a time), so nothing moves
// a name between the check and the use. The status is the first line of
// the output, never the exit code (Store.output treats one as a failure).
const filesScript = `op=$1 rel=$2; cd ` + podRoot + ` || exit 1
set -f; p=.
if [ "$rel" != . ]; then
  IFS=/; set -- $rel; IFS=' 	
'
  for c; do
    [ -d "$p" ] || { echo 10; exit 0; }
    p=$p/$c
    [ -L "$p" ] && { echo 11; exit 0; }
    [ -e "$p" ] || { echo 10; exit 0; }
  done
fi
case $op in
stat) echo "0 $(stat -c %f "$p")" ;;
read)
  [ -d "$p" ] && { echo "12 directory"; exit 0; }
  [ -f "$p" ] || { echo "12 special file"; exit 0; }
  set -- $(stat -c '%f %h %s' "$p")
  [ "$2" -gt 1 ] && { echo "12 hard link"; exit 0; }
  [ "$3" -gt "$MAX" ] && { echo "13 $3"; exit 0; }
  echo "0 $1 $3"; exec cat "$p" ;;
list)
  [ -d "$p" ] || { echo 14; exit 0; }
  echo 0; cd "$p" && find . -mindepth 1 -maxdepth 1 -type d -print0 && find . -maxdepth 0 -print0 &&
    find . -mindepth 1 -maxdepth 1 ! -type d -print0 ;;
esac`

// writeScript replaces or makes a file from stdin: parents made as
// needed (none a link), the new content in a fresh file outside the tree
// (the same volume) checked against its SHA-256, then renamed over the name — never written through what is
// there. $1 the path, $2 the mode (octal), $3 the SHA-256.
const writeScript = `rel=$1; cd ` + podRoot + ` || exit 1
set -f; p=.
IFS=/; set -- $rel "$2" "$3"; IFS=' 	
'
while [ $# -gt 3 ]; do
  p=$p/$1; shift
  [ -L "$p" ] && exit 11
  [ -e "$p" ] || mkdir "$p" || exit 1
  [ -d "$p" ] || exit 10
done
f=$p/$1; mode=$2; sum=$3
[ -L "$f" ] && exit 11
[ -d "$f" ] && exit 14
if [ -f "$f" ] && [ "$(stat -c %h "$f")" -gt 1 ]; then exit 12; fi
t=` + podScratch + `/write.$$
rm -f "$t"; cat >"$t" || { rm -f "$t"; exit 1; }
[ "$(sha256sum <"$t" | cut -d' ' -f1)" = "$sum" ] || { rm -f "$t"; exit 15; }
chmod "$mode" "$t" && mv -f "$t" "$f"`

// podFiles are a fork's files while its pod runs (workspace.Files);
// before its pod starts they are the local fork's (see Store.Files).
type podFiles struct {
	s    *Store
	name string
	fs   *forkState
}

var _ workspace.Files = podFiles{}

// local returns the local fork's files when the pod has not started (the
// pod would be sent the pid 1's tree and the writes made here, see
// replay), or nil when calls go to the pod. The caller holds filesMu.
func (f podFiles) local(ctx context.Context) (workspace.Files, error) {
	if f.fs.started.Load() {
		return nil, nil
	}
	_, lf, err := f.s.o.Local.Files(ctx, f.name)
	if err != nil {
		return nil, err
	}
	return lf, nil
}

// call runs filesScript for op and returns its status line's fields and
// what follows it, read whole (Store.output). The caller's ctx stops it;
// filesTimeout bounds it, as an exec stream has no API call's timeout.
func (f podFiles) call(ctx context.Context, op, rel string, max int, args ...string) ([]string, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, filesTimeout)
	defer cancel()
	script := "MAX=" + strconv.Itoa(max) + "; " + filesScript
	out, _, err := f.s.output(ctx, f.fs.obj, script, append([]string{op, rel}, args...), max+64)
	if err != nil {
		if errors.Is(err, errTooBig) {
			return nil, nil, &layerfs.LimitError{Path: rel, What: "bytes", Size: int64(max) + 1, Limit: int64(max)}
		}
		return nil, nil, fmt.Errorf("%s %s in %s: %w", op, rel, f.name, err)
	}
	line, rest, _ := bytes.Cut(out, []byte("\n"))
	fields := strings.Fields(string(line))
	if len(fields) == 0 {
		return nil, nil, fmt.Errorf("%s %s in %s: no status", op, rel, f.name)
	}
	if err := statusErr(rel, fields); err != nil {
		return nil, nil, err
	}
	return fields, rest, nil
}

// statusErr words a pod-side status as layerfs does on this machine.
func statusErr(rel string, fields []string) error {
	code, err := strconv.Atoi(fields[0])
	if err != nil {
		return fmt.Errorf("%s: bad status %q", rel, fields[0])
	}
	return codeErr(rel, code, fields[1:])
}

func codeErr(rel string, code int, rest []string) error {
	switch code {
	case 0:
		return nil
	case stNotExist:
		return &fs.PathError{Op: "lookup", Path: rel, Err: fs.ErrNotExist}
	case stSymlink:
		return &layerfs.KindError{Path: rel, Kind: "symlink", Err: layerfs.ErrSymlink}
	case stNotRegular:
		return &layerfs.KindError{Path: rel, Kind: strings.Join(rest, " "), Err: layerfs.ErrNotRegular}
	case stTooBig:
		size := int64(-1)
		if len(rest) > 0 {
			size, _ = strconv.ParseInt(rest[0], 10, 64)
		}
		return &layerfs.LimitError{Path: rel, What: "file", Size: size}
	case stIsDir:
		return fmt.Errorf("%s is a directory", rel)
	}
	return fmt.Errorf("%s: status %d in the pod", rel, code)
}

// rawMode turns stat's %f (the raw st_mode, hex) into an fs.FileMode.
func rawMode(hexMode string) (fs.FileMode, error) {
	m, err := strconv.ParseUint(hexMode, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("bad mode %q", hexMode)
	}
	mode := fs.FileMode(m & 0o777)
	switch m & 0o170000 {
	case 0o100000:
	case 0o040000:
		mode |= fs.ModeDir
	case 0o120000:
		mode |= fs.ModeSymlink
	default:
		mode |= fs.ModeIrregular
	}
	return mode, nil
}

// Stat implements workspace.Files.
func (f podFiles) Stat(ctx context.Context, rel string) (fs.FileMode, error) {
	f.fs.filesMu.Lock()
	defer f.fs.filesMu.Unlock()
	if lf, err := f.local(ctx); err != nil || lf != nil {
		if err != nil {
			return 0, err
		}
		return lf.Stat(ctx, rel)
	}
	fields, _, err := f.call(ctx, "stat", rel, 64)
	if err != nil {
		return 0, err
	}
	if len(fields) != 2 {
		return 0, fmt.Errorf("stat %s: bad answer", rel)
	}
	return rawMode(fields[1])
}

// Read implements workspace.Files: a regular file with one link, of at
// most max bytes, reached through no link.
func (f podFiles) Read(ctx context.Context, rel string, max int64) ([]byte, fs.FileMode, error) {
	f.fs.filesMu.Lock()
	defer f.fs.filesMu.Unlock()
	if lf, err := f.local(ctx); err != nil || lf != nil {
		if err != nil {
			return nil, 0, err
		}
		return lf.Read(ctx, rel, max)
	}
	if max > 1<<30 {
		max = 1 << 30
	}
	fields, data, err := f.call(ctx, "read", rel, int(max))
	var le *layerfs.LimitError
	if errors.As(err, &le) && le.Limit == 0 {
		le.Limit = max
	}
	if err != nil {
		return nil, 0, err
	}
	if len(fields) != 3 {
		return nil, 0, fmt.Errorf("read %s: bad answer", rel)
	}
	mode, err := rawMode(fields[1])
	if err != nil {
		return nil, 0, err
	}
	if size, err := strconv.Atoi(fields[2]); err != nil || size != len(data) {
		return nil, 0, fmt.Errorf("read %s: %d bytes, the pod said %s", rel, len(data), fields[2])
	}
	return data, mode.Perm(), nil
}

// List implements workspace.Files: folders end in "/", sorted.
func (f podFiles) List(ctx context.Context, rel string, max int) ([]string, error) {
	f.fs.filesMu.Lock()
	defer f.fs.filesMu.Unlock()
	if lf, err := f.local(ctx); err != nil || lf != nil {
		if err != nil {
			return nil, err
		}
		return lf.List(ctx, rel, max)
	}
	_, data, err := f.call(ctx, "list", rel, maxListOutput)
	if err != nil {
		return nil, err
	}
	var out []string
	dirs := true
	for _, n := range bytes.Split(data, []byte{0}) {
		name := string(n)
		switch {
		case name == ".": // between the folders and the rest
			dirs = false
			continue
		case !strings.HasPrefix(name, "./"):
			continue
		}
		name = strings.TrimPrefix(name, "./")
		if dirs {
			name += "/"
		}
		if len(out) == max {
			return nil, &layerfs.LimitError{Path: rel, What: "files", Limit: int64(max)}
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out, nil
}

// Write implements workspace.Files. Before the pod starts the write goes
// to the local fork and is replayed into the pod when it starts.
func (f podFiles) Write(ctx context.Context, rel string, data []byte, mode fs.FileMode) error {
	f.fs.filesMu.Lock()
	defer f.fs.filesMu.Unlock()
	if lf, err := f.local(ctx); err != nil || lf != nil {
		if err != nil {
			return err
		}
		if err := lf.Write(ctx, rel, data, mode); err != nil {
			return err
		}
		f.fs.pending = append(f.fs.pending, rel)
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, filesTimeout)
	defer cancel()
	return f.s.writePod(ctx, f.fs.obj, rel, data, mode)
}

// writePod sends one file to a pod's tree (writeScript), again when the
// bytes that arrived are not the ones sent.
func (s *Store) writePod(ctx context.Context, pod, rel string, data []byte, mode fs.FileMode) error {
	if rel == "." || rel == "" {
		return errors.New("cannot write the root")
	}
	sum := sha256.Sum256(data)
	args := []string{"/bin/sh", "-c", writeScript, "sh", rel, strconv.FormatUint(uint64(mode.Perm()), 8), hex.EncodeToString(sum[:])}
	for try := 0; try < writeTries; try++ {
		var errb limitedBuffer
		errb.max = 4 << 10
		code, err := s.run(ctx, pod, args, bytes.NewReader(data), nil, &errb)
		if err != nil {
			return fmt.Errorf("write %s: %w", rel, err)
		}
		switch code {
		case stBadSum:
			continue
		case 1:
			return fmt.Errorf("write %s: %s", rel, strings.TrimSpace(errb.String()))
		}
		return codeErr(rel, code, []string{"hard", "link"}) // the one kind write refuses
	}
	return fmt.Errorf("write %s: the bytes that reached the pod were not those sent, %d times", rel, writeTries)
}

// replay sends the editor's writes made before the pod started (to the
// local fork) into the pod, after the pid 1's tree. The caller holds
// filesMu.
func (s *Store) replay(ctx context.Context, name string, fs *forkState) error {
	if len(fs.pending) == 0 {
		return nil
	}
	_, lf, err := s.o.Local.Files(ctx, name)
	if err != nil {
		return err
	}
	done := map[string]bool{}
	for _, rel := range fs.pending {
		if done[rel] {
			continue
		}
		done[rel] = true
		data, mode, err := lf.Read(ctx, rel, maxPatch)
		if err != nil {
			return fmt.Errorf("send %s's edit of %s: %w", name, rel, err)
		}
		if err := s.writePod(ctx, fs.obj, rel, data, mode); err != nil {
			return fmt.Errorf("send %s's edit: %w", name, err)
		}
	}
	fs.pending = nil
	return nil
}

// Files returns the fork's files for an in-process editor: in its pod
// once the pod runs, in the local fork until then (a model that edits
// before its first command must not wait for a pod). root is the path a
// command in the pod sees as its cwd.
func (s *Store) Files(ctx context.Context, name string) (string, workspace.Files, error) {
	s.mu.Lock()
	fs := s.forks[name]
	s.mu.Unlock()
	if fs == nil {
		if _, err := s.o.Local.Get(ctx, name); err != nil {
			return "", nil, err
		}
		return "", nil, fmt.Errorf("files of %s: %w", name, os.ErrNotExist)
	}
	return podRoot, podFiles{s: s, name: name, fs: fs}, nil
}
