package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// CheckHide reports whether path may be hidden from a confined command (see
// Policy.Hide): it must be absolute and must neither be nor hold the root
// or a system folder, and must not lie inside a kernel interface (/proc,
// /sys, /dev), whose entries cannot be covered. It does not look at the
// filesystem.
func CheckHide(path string) error {
	if !filepath.IsAbs(path) {
		return policyErr("Hide", fmt.Sprintf("%q", path), "not absolute")
	}
	path = filepath.Clean(path)
	if path == "/" {
		return policyErr("Hide", "/", "refusing to hide the whole filesystem")
	}
	for _, sys := range systemDirs {
		if within(sys, path) {
			return policyErr("Hide", path, "refusing to hide what is or holds the system folder %s", sys)
		}
	}
	for _, k := range []string{"/proc", "/sys", "/dev"} {
		if within(path, k) {
			return policyErr("Hide", path, "refusing to hide a path inside the kernel interface %s", k)
		}
	}
	return nil
}

// resolveHide makes every hidden path canonical, drops the ones that do not
// exist (nothing to hide), and refuses the ones CheckHide refuses, by the
// name given and by the name it resolves to, so a symlink cannot smuggle
// in the root or a system folder.
func (r *resolved) resolveHide(paths []string) error {
	r.Hide = nil
	for _, p := range paths {
		if err := CheckHide(p); err != nil {
			return err
		}
		c, err := filepath.EvalSymlinks(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return &PolicyError{Field: "Hide", Value: p, Reason: err.Error(), Err: err}
		}
		if err := CheckHide(c); err != nil {
			return err
		}
		r.Hide = append(r.Hide, c)
	}
	return nil
}

// hideGrantConflict names the first hidden path that lies strictly inside
// one of the granted trees. The Landlock backend only adds access, never
// takes it away below a grant, so it cannot hide such a path and refuses
// to run rather than show it. (A hidden path that is itself granted, or
// that holds a grant, is fine: the explicit grant is what the caller asked
// to see, as with the namespaces backend.)
func hideGrantConflict(hide, grants []string) error {
	for _, h := range hide {
		for _, g := range grants {
			if g != "" && h != g && within(h, g) {
				return fmt.Errorf("%s is to be hidden but lies inside %s, which the command may read; Landlock cannot hide it (the namespaces backend can)", h, g)
			}
		}
	}
	return nil
}
