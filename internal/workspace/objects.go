package workspace

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/forkbomb/forkbomb/internal/atomicfile"
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
// miss that git answers: another tree would take a hash collision, which
// is git's own limit (with SHA-1 there, and with collision detection).
// Only a plain file in a plain folder is read, never through a link, and
// no larger than cat-file's bound. The cache lies in FORKBOMB_HOME, which
// no sandbox sees, and goes with pid 1.
type objects struct {
	ctx    context.Context
	g      gitCmd
	cache  string // "" for none
	sha256 bool   // the repository's object format
	cat    *catFile
	looked bool // the cache folder was checked (cacheDir)
}

// maxCachedObject bounds a kept object's read, as catFile.get bounds git's.
const maxCachedObject = 1 << 30

// get reads the object id (in full hex) of the given kind ("commit", "tree").
func (o *objects) get(id, kind string) ([]byte, error) {
	if !isObjectID(id, o.sha256) {
		return nil, fmt.Errorf("%q is not an object id", id)
	}
	if data, ok := o.cached(id); ok && objectID(objectHeader(kind, data), data, o.sha256) == id {
		return data, nil
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
	if sha != id {
		return nil, fmt.Errorf("git cat-file answered %s for %s", sha, id)
	}
	if k != kind {
		return nil, fmt.Errorf("object %s is a %s, not a %s", id, k, kind)
	}
	o.keep(id, data)
	return data, nil
}

// cacheDir is the cache's folder when it is a plain folder (made if
// missing), else "": a link or anything else there turns the cache off.
func (o *objects) cacheDir() string {
	if !o.looked {
		o.looked = true
		if o.cache != "" {
			if err := os.Mkdir(o.cache, 0o700); err != nil && !os.IsExist(err) {
				o.cache = ""
			} else if fi, err := os.Lstat(o.cache); err != nil || !fi.IsDir() {
				o.cache = ""
			}
		}
	}
	return o.cache
}

// cached reads a kept object's bytes: a regular file (atomicfile.Read: no
// link followed, no pipe waited on, bounded).
func (o *objects) cached(id string) ([]byte, bool) {
	dir := o.cacheDir()
	if dir == "" {
		return nil, false
	}
	data, err := atomicfile.Read(filepath.Join(dir, id), maxCachedObject)
	return data, err == nil && data != nil
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
// in turn). Not atomicfile.Write: a kept object needs no fsync, as one torn
// by a crash fails its hash and is a miss. A cache that cannot be written
// only costs the next diff a git process, so its errors are not the diff's.
func (o *objects) keep(id string, data []byte) {
	dir := o.cacheDir()
	if dir == "" {
		return
	}
	tmp, err := os.CreateTemp(dir, ".tmp-")
	if err != nil {
		return
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, id))
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

// isObjectID reports whether s is an object id of the repository's format
// in full lower-case hex.
func isObjectID(s string, sha256Format bool) bool {
	return IsObjectName(s) && (len(s) == 64) == sha256Format
}
