package mutant

import (
	"io/fs"
	"os"
	"path"
	"strings"
)

// skipDirs are never mutated: vendored code, dependencies, fixtures.
var skipDirs = map[string]bool{".git": true, "vendor": true, "node_modules": true, "testdata": true, "__pycache__": true, ".venv": true, "venv": true}

// sources lists the files of the snapshot to mutate, slash-separated and
// relative, with their content. It reads through an os.Root, never
// following a link out of the tree, and only regular files.
func sources(tree string, globs []string, maxFile int64) (map[string][]byte, error) {
	root, err := os.OpenRoot(tree)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	out := map[string][]byte{}
	err = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && (skipDirs[d.Name()] || strings.HasPrefix(d.Name(), ".")) {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !mutable(p) || !matches(p, globs) {
			return nil
		}
		fi, err := d.Info()
		if err != nil || fi.Size() > maxFile {
			return nil
		}
		b, err := root.ReadFile(p)
		if err != nil {
			return err
		}
		out[p] = b
		return nil
	})
	return out, err
}

func mutable(p string) bool {
	switch {
	case strings.HasSuffix(p, "_test.go"), strings.HasSuffix(p, ".test.js"), strings.HasSuffix(p, ".spec.js"):
		return false
	case strings.HasSuffix(p, ".py"):
		b := path.Base(p)
		return !strings.HasPrefix(b, "test_") && !strings.HasSuffix(b, "_test.py") && b != "conftest.py" && !strings.Contains("/"+p, "/tests/")
	}
	for _, ext := range []string{".go", ".js", ".mjs", ".cjs"} {
		if strings.HasSuffix(p, ext) {
			return true
		}
	}
	return false
}

// matches: no globs match everything; a glob matches the whole path, its
// base name, or (ending in /...) a folder and everything below it.
func matches(p string, globs []string) bool {
	if len(globs) == 0 {
		return true
	}
	for _, g := range globs {
		if dir, ok := strings.CutSuffix(g, "/..."); ok {
			if dir == "." || p == dir || strings.HasPrefix(p, dir+"/") {
				return true
			}
			continue
		}
		if ok, _ := path.Match(g, p); ok {
			return true
		}
		if ok, _ := path.Match(g, path.Base(p)); ok && !strings.Contains(g, "/") {
			return true
		}
	}
	return false
}
