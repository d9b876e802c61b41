package workspace

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// objCacheName is the folder, beside pid 1's tree, where the diffs of its
// forks keep the base's commit and the trees they read (objects).
const objCacheName = "objcache"

// objects reads the base's commit and trees for a diff. A base never
// changes, so each object a diff reads from pid 1's repository is kept, as
// its bytes, in pid 1's object cache: the diffs of its forks that pass
// through folders read before start no git process for them. A
// `git cat-file --batch` is started at the first object the cache lacks.
//
// A kept object is used only when its bytes hash to the id asked for as
// the kind asked for, so a damaged file (or one a user put there) is a
// miss that git answers, never another tree. The cache lies in
// FORKBOMB_HOME, which no sandbox sees, and goes with pid 1.
type objects struct {
	ctx    context.Context
	g      gitCmd
	cache  string // "" for none
	sha256 bool   // the repository's object format
	cat    *catFile
}

// get reads the object id (in full hex) of the given kind ("commit", "tree").
func (o *objects) get(id, kind string) ([]byte, error) {
	if !isObjectID(id, o.sha256) {
		return nil, fmt.Errorf("%q is not an object id", id)
	}
	if o.cache != "" {
		if data, err := os.ReadFile(filepath.Join(o.cache, id)); err == nil && objectID(objectHeader(kind, data), data, o.sha256) == id {
			return data, nil
		}
	}
	if o.cat == nil {
		cat, err := startCatFile(o.ctx, o.g)
		if err != nil {
			return nil, err
		}
		o.cat = cat
	}
	sha, k, data, err := o.cat.get(id)
	if err != nil {
		return nil, err
	}
	if sha != id || k != kind {
		return nil, fmt.Errorf("object %s is a %s, not a %s", id, k, kind)
	}
	o.keep(id, data)
	return data, nil
}

// treeOf is the id of a commit's tree.
func (o *objects) treeOf(commit string) (string, error) {
	data, err := o.get(commit, "commit")
	if err != nil {
		return "", err
	}
	line, _, _ := bytes.Cut(data, []byte("\n"))
	id, ok := bytes.CutPrefix(line, []byte("tree "))
	if !ok || !isObjectID(string(id), o.sha256) {
		return "", fmt.Errorf("commit %s names no tree", commit)
	}
	return string(id), nil
}

// keep writes an object read from git into the cache, whole or not at all
// (a temp file renamed into place, so two diffs at once write the same bytes
// in turn). A cache that cannot be written only costs the next diff a git
// process, so its errors are not the diff's.
func (o *objects) keep(id string, data []byte) {
	if o.cache == "" {
		return
	}
	if err := os.Mkdir(o.cache, 0o700); err != nil && !os.IsExist(err) {
		return
	}
	tmp, err := os.CreateTemp(o.cache, ".tmp-")
	if err != nil {
		return
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(o.cache, id))
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
}

func (o *objects) close() {
	if o.cat != nil {
		o.cat.close()
	}
}

// isObjectID reports whether s is an object id in full lower-case hex.
func isObjectID(s string, sha256Format bool) bool {
	n := 40
	if sha256Format {
		n = 64
	}
	if len(s) != n {
		return false
	}
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
