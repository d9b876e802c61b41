package sandbox

// Programs allowed and denied.
//
// What the kernel enforces: Landlock's execute right, checked when a file
// is opened for execve (and for the ELF interpreter the kernel loads for
// it), on every exec of every process of the command — sh -c, xargs,
// find -exec, env, a compiled helper are all execs. A symlink is judged by
// the file it leads to, a hard link by its inode.
//
// A file without a name is held too. A memfd lives on the kernel's
// internal mount, which Landlock does not see and which is not noexec, so
// under any program rule the seccomp filter refuses memfd_create
// (memfdRule): no memfd exists to execve through /proc/self/fd, to
// execveat with AT_EMPTY_PATH, or to hand to the loader. An O_TMPFILE or
// deleted file is judged, however it is executed, by the mount and the
// folder it was made in, like the copy it is (below).
//
// What it does not cover, and so neither does forkbomb:
//   - An allowed interpreter running a script or code (sh script,
//     python3 -c): the interpreter is what executes; the script is data.
//     That includes code it loads into its own memory (anonymous memory
//     made executable, as a JIT does: a loader written in the script).
//   - The dynamic loader run as a program (ld.so /usr/bin/x): ld.so must
//     be executable for every dynamic binary to start, and it maps x with
//     mmap, which Landlock does not check. So on a mount that allows
//     execution (the host's read-only tree) a denied or unlisted file can
//     still run that way. With an allow-list the writable trees and temp
//     are mounted noexec in the namespaces backend, where mmap(PROT_EXEC)
//     fails too, so a copy made inside the fork cannot run even through
//     ld.so; the landlock backend has no noexec mounts.
//   - A deny-list alone cannot stop a copy (or a hard link made in a
//     writable tree) of a denied program: the copy is a new file the deny
//     rule never named — named, O_TMPFILE or deleted alike.

import (
	"path/filepath"
	"slices"
)

// resolvePrograms makes AllowPrograms and DenyPrograms canonical. A path
// that does not exist is refused rather than ignored: a misspelt deny
// would otherwise deny nothing. An allowed program inside a writable tree
// is refused: the command could replace it with anything.
func (r *resolved) resolvePrograms() error {
	canon := func(field string, in []string) ([]string, error) {
		var out []string
		for _, p := range in {
			if !filepath.IsAbs(p) {
				return nil, policyErr(field, p, "not an absolute path")
			}
			c, err := canonicalDir(p, field, false)
			if err != nil {
				return nil, err
			}
			if !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
		return out, nil
	}
	var err error
	if r.AllowPrograms, err = canon("AllowPrograms", r.AllowPrograms); err != nil {
		return err
	}
	if r.DenyPrograms, err = canon("DenyPrograms", r.DenyPrograms); err != nil {
		return err
	}
	writable := slices.Concat([]string{r.Workdir}, r.ReadWrite, r.Scratch)
	for _, a := range r.AllowPrograms {
		for _, w := range writable {
			if within(a, w) || within(w, a) {
				return policyErr("AllowPrograms", a, "overlaps the writable tree %s: the command could replace what it allows", w)
			}
		}
	}
	return nil
}

// RestrictsExec reports whether p limits what its command may execute.
func (p Policy) RestrictsExec() bool {
	return len(p.AllowPrograms) > 0 || len(p.DenyPrograms) > 0
}
