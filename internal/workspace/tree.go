package workspace

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sort"
	"strconv"
	"strings"
)

// treeEditor builds the tree a fork's changes make by editing the base
// commit's tree along the changed paths only: the trees it passes through
// are read from pid 1's objects (objects: its cache, else one git cat-file
// for the whole diff), and
// the trees it changes are written as loose objects by forkbomb itself. No
// index is read or written, so the cost follows the change, not the tree.
type treeEditor struct {
	obj  *objects
	bw   blobWriter
	root *treeNode
	base string // the commit whose tree root is, read at root's first load
}

type treeNode struct {
	sha     string // the base tree this node was read from ("" for a new one)
	entries map[string]*treeEntry
	loaded  bool
	dirty   bool
}

type treeEntry struct {
	mode string // as git writes it: 40000, 100644, 100755, 120000, 160000
	sha  string
	sub  *treeNode // a tree, once descended
}

func (e *treeEntry) isTree() bool { return e.mode == "40000" }

// newTreeEditor starts at base's tree; with empty, at an empty tree (a copy
// fork, which holds every file).
func newTreeEditor(obj *objects, bw blobWriter, base string, empty bool) *treeEditor {
	t := &treeEditor{obj: obj, bw: bw, root: &treeNode{entries: map[string]*treeEntry{}, loaded: true}}
	if !empty {
		t.root, t.base = &treeNode{}, base
	}
	return t
}

func (t *treeEditor) load(n *treeNode) error {
	if n.loaded {
		return nil
	}
	if n == t.root && n.sha == "" {
		// A fork that changed nothing never reads the base.
		sha, err := t.obj.treeOf(t.base)
		if err != nil {
			return err
		}
		n.sha = sha
	}
	data, err := t.obj.get(n.sha, "tree")
	if err != nil {
		return err
	}
	n.entries = map[string]*treeEntry{}
	size := 20
	if t.bw.sha256 {
		size = 32
	}
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		nul := bytes.IndexByte(data, 0)
		if sp < 0 || nul < sp || len(data) < nul+1+size {
			return fmt.Errorf("tree %s is malformed", n.sha)
		}
		n.entries[string(data[sp+1:nul])] = &treeEntry{mode: string(data[:sp]), sha: hex.EncodeToString(data[nul+1 : nul+1+size])}
		data = data[nul+1+size:]
	}
	n.loaded = true
	return nil
}

// walk returns the node of the folder dir (slash path, "" for the root),
// or nil when the base has no folder there. With create, missing folders —
// and files standing where a folder must be — become new empty folders.
func (t *treeEditor) walk(dir string, create bool) (*treeNode, error) {
	n := t.root
	if dir == "" || dir == "." {
		return n, t.load(n)
	}
	var chain []*treeNode
	for _, c := range strings.Split(dir, "/") {
		if err := t.load(n); err != nil {
			return nil, err
		}
		chain = append(chain, n)
		e := n.entries[c]
		switch {
		case e != nil && e.isTree():
			if e.sub == nil {
				e.sub = &treeNode{sha: e.sha}
			}
		case !create:
			return nil, nil
		default:
			e = &treeEntry{mode: "40000", sub: &treeNode{entries: map[string]*treeEntry{}, loaded: true}}
			n.entries[c] = e
			for _, p := range chain {
				p.dirty = true
			}
		}
		n = e.sub
	}
	return n, t.load(n)
}

// lookup returns the base entry at p, or nil.
func (t *treeEditor) lookup(p string) (*treeEntry, error) {
	dir, name := splitPath(p)
	n, err := t.walk(dir, false)
	if n == nil || err != nil {
		return nil, err
	}
	return n.entries[name], nil
}

// remove deletes p (a file, or a folder and all below it) if it is there.
func (t *treeEditor) remove(p string) error {
	dir, name := splitPath(p)
	n, err := t.walk(dir, false)
	if n == nil || err != nil || n.entries[name] == nil {
		return err
	}
	delete(n.entries, name)
	return t.markDirty(dir)
}

// set puts a blob (or link) at p, making the folders it needs.
func (t *treeEditor) set(p, mode, sha string) error {
	dir, name := splitPath(p)
	n, err := t.walk(dir, true)
	if err != nil {
		return err
	}
	n.entries[name] = &treeEntry{mode: mode, sha: sha}
	return t.markDirty(dir)
}

func (t *treeEditor) markDirty(dir string) error {
	t.root.dirty = true
	if dir == "" {
		return nil
	}
	n := t.root
	for _, c := range strings.Split(dir, "/") {
		e := n.entries[c]
		if e == nil || e.sub == nil {
			return nil
		}
		n = e.sub
		n.dirty = true
	}
	return nil
}

// write writes every changed tree, deepest first, and returns the root's
// id. A folder left empty is dropped, as git keeps no empty folders.
func (t *treeEditor) write() (string, error) {
	sha, _, err := t.writeNode(t.root)
	return sha, err
}

func (t *treeEditor) writeNode(n *treeNode) (sha string, empty bool, err error) {
	if !n.dirty {
		return n.sha, false, nil
	}
	type item struct {
		key, name string
		e         *treeEntry
	}
	var items []item
	for name, e := range n.entries {
		if e.sub != nil {
			sub, empty, err := t.writeNode(e.sub)
			if err != nil {
				return "", false, err
			}
			if empty {
				continue
			}
			e.sha = sub
		}
		key := name
		if e.isTree() {
			key += "/" // git orders a folder as if its name ended in "/"
		}
		items = append(items, item{key, name, e})
	}
	if len(items) == 0 && n != t.root {
		return "", true, nil
	}
	sort.Slice(items, func(i, j int) bool { return items[i].key < items[j].key })
	var b bytes.Buffer
	for _, it := range items {
		raw, err := hex.DecodeString(it.e.sha)
		if err != nil {
			return "", false, fmt.Errorf("entry %q: bad id %q", it.name, it.e.sha)
		}
		b.WriteString(it.e.mode + " " + it.name + "\x00")
		b.Write(raw)
	}
	sha, err = t.bw.writeObject("tree", b.Bytes())
	return sha, false, err
}

func splitPath(p string) (dir, name string) {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i], p[i+1:]
	}
	return "", p
}

// catFile is one `git cat-file --batch` serving object reads for a diff.
type catFile struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func startCatFile(ctx context.Context, g gitCmd) (*catFile, error) {
	c := g.cmd(ctx, "cat-file", "--batch")
	in, err := c.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := c.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := c.Start(); err != nil {
		return nil, fmt.Errorf("git cat-file: %w", err)
	}
	return &catFile{cmd: c, in: in, out: bufio.NewReaderSize(out, 64<<10)}, nil
}

// get reads one object by name (an id, or an expression such as
// "REV^{tree}"; never a name from the fork).
func (c *catFile) get(name string) (sha, kind string, data []byte, err error) {
	if strings.ContainsAny(name, "\n\x00") {
		return "", "", nil, errors.New("cat-file: bad object name")
	}
	if _, err := io.WriteString(c.in, name+"\n"); err != nil {
		return "", "", nil, fmt.Errorf("git cat-file: %w", err)
	}
	header, err := c.out.ReadString('\n')
	if err != nil {
		return "", "", nil, fmt.Errorf("git cat-file: %w", err)
	}
	f := strings.Fields(header)
	if len(f) != 3 {
		return "", "", nil, fmt.Errorf("git cat-file: %s", strings.TrimSpace(header))
	}
	size, err := strconv.Atoi(f[2])
	if err != nil || size < 0 || size > 1<<30 {
		return "", "", nil, fmt.Errorf("git cat-file: bad size in %q", strings.TrimSpace(header))
	}
	data = make([]byte, size+1)
	if _, err := io.ReadFull(c.out, data); err != nil {
		return "", "", nil, fmt.Errorf("git cat-file: %w", err)
	}
	return f[0], f[1], data[:size], nil
}

func (c *catFile) close() {
	c.in.Close()
	c.cmd.Wait()
}
