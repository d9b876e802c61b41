package world

import (
	"fmt"
	"io"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"time"
)

type cmdFunc func(c *cmd, args []string) int

// commands are the world's programs, all Go; init fills it to break the cycle through xargs.
var commands map[string]cmdFunc

func init() {
	commands = map[string]cmdFunc{
		"cat": cmdCat, "echo": cmdEcho, "printf": cmdPrintf, "true": func(*cmd, []string) int { return 0 },
		"false": func(*cmd, []string) int { return 1 }, "ls": cmdLs, "mkdir": cmdMkdir, "rmdir": cmdRmdir,
		"rm": cmdRm, "cp": cmdCp, "mv": cmdMv, "ln": cmdLn, "touch": cmdTouch, "stat": cmdStat,
		"chmod": cmdChmod, "find": cmdFind, "grep": cmdGrep, "sed": cmdSed, "awk": cmdAwk, "sort": cmdSort,
		"uniq": cmdUniq, "cut": cmdCut, "tr": cmdTr, "head": cmdHead, "tail": cmdTail, "wc": cmdWc,
		"tee": cmdTee, "xargs": cmdXargs, "diff": cmdDiff, "basename": cmdBasename, "dirname": cmdDirname,
		"realpath": cmdRealpath, "readlink": cmdReadlink, "seq": cmdSeq, "date": cmdDate, "env": cmdEnv,
		"printenv": cmdPrintenv, "base64": cmdBase64, "sha256sum": cmdSha256, "md5sum": cmdMd5,
		"jq": cmdJq, "tar": cmdTar, "gzip": cmdGzip, "gunzip": cmdGunzip, "sleep": cmdSleep,
		"which": cmdWhich, "du": cmdDu, "tree": cmdTree,
	}
}

// flags splits leading short options ("-rn", "-n 5", "-n5"); valued lists the letters taking a
// value. "--" ends them; a lone "-" is an operand.
func flags(args []string, valued string) (map[byte]string, []string, error) {
	set := map[byte]string{}
	for len(args) > 0 {
		a := args[0]
		if a == "--" {
			return set, args[1:], nil
		}
		if len(a) < 2 || a[0] != '-' {
			break
		}
		args = args[1:]
		if strings.HasPrefix(a, "--") {
			set['-'] += a + "\n"
			continue
		}
		for i := 1; i < len(a); i++ {
			ch := a[i]
			if strings.IndexByte(valued, ch) < 0 {
				set[ch] = "1"
				continue
			}
			v := a[i+1:]
			if v == "" {
				if len(args) == 0 {
					return nil, nil, fmt.Errorf("option -%c needs a value", ch)
				}
				v, args = args[0], args[1:]
			}
			set[ch] = v
			break
		}
	}
	return set, args, nil
}

func has(set map[byte]string, chs string) bool {
	for i := 0; i < len(chs); i++ {
		if _, ok := set[chs[i]]; ok {
			return true
		}
	}
	return false
}

func cmdCat(c *cmd, args []string) int {
	_, files, err := flags(args, "")
	if err != nil {
		return c.failErr(err)
	}
	if len(files) == 0 {
		_, err := io.Copy(c.out, c.in)
		if err != nil {
			return c.failErr(err)
		}
		return 0
	}
	status := 0
	for _, f := range files {
		b, err := c.read(f)
		if err != nil {
			status = c.failErr(err)
			continue
		}
		c.out.Write(b)
	}
	return status
}

func cmdEcho(c *cmd, args []string) int {
	nl := true
	if len(args) > 0 && args[0] == "-n" {
		nl, args = false, args[1:]
	}
	fmt.Fprint(c.out, strings.Join(args, " "))
	if nl {
		fmt.Fprintln(c.out)
	}
	return 0
}

func cmdLs(c *cmd, args []string) int {
	set, paths, err := flags(args, "")
	if err != nil {
		return c.failErr(err)
	}
	if len(paths) == 0 {
		paths = []string{"."}
	}
	all, long, one := has(set, "a"), has(set, "l"), true
	_ = one
	status := 0
	for i, p := range paths {
		st, err := c.fs.Stat(c.abs(p), true)
		if err != nil {
			status = c.fail("cannot access '%s': %v", p, unwrapPath(err))
			continue
		}
		if !st.IsDir() || has(set, "d") {
			c.lsLine(long, p, st)
			continue
		}
		if len(paths) > 1 {
			if i > 0 {
				fmt.Fprintln(c.out)
			}
			fmt.Fprintf(c.out, "%s:\n", p)
		}
		ents, _ := c.fs.ReadDir(c.abs(p))
		for _, e := range ents {
			if !all && strings.HasPrefix(e.Name(), ".") {
				continue
			}
			info, _ := e.Info()
			c.lsLine(long, e.Name(), info)
		}
	}
	return status
}

func (c *cmd) lsLine(long bool, name string, st fs.FileInfo) {
	if !long {
		fmt.Fprintln(c.out, name)
		return
	}
	fmt.Fprintf(c.out, "%s 1 user user %8d %s %s\n", st.Mode().String(), st.Size(), st.ModTime().UTC().Format("Jan _2 15:04"), name)
}

func unwrapPath(err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err
	}
	return err
}

func cmdMkdir(c *cmd, args []string) int {
	set, paths, err := flags(args, "m")
	if err != nil {
		return c.failErr(err)
	}
	mode := fs.FileMode(0o755)
	if m, ok := set['m']; ok {
		v, err := strconv.ParseUint(m, 8, 32)
		if err != nil {
			return c.fail("invalid mode '%s'", m)
		}
		mode = fromPosix(uint32(v))
	}
	status := 0
	for _, p := range paths {
		var err error
		if has(set, "p") {
			err = c.fs.MkdirAll(c.abs(p), mode)
		} else {
			err = c.fs.Mkdir(c.abs(p), mode)
		}
		if err != nil {
			status = c.fail("cannot create directory '%s': %v", p, unwrapPath(err))
		}
	}
	return status
}

func cmdRmdir(c *cmd, args []string) int {
	_, paths, _ := flags(args, "")
	status := 0
	for _, p := range paths {
		st, err := c.fs.Stat(c.abs(p), false)
		if err == nil && !st.IsDir() {
			status = c.fail("failed to remove '%s': Not a directory", p)
			continue
		}
		if err := c.fs.Remove(c.abs(p), false); err != nil {
			status = c.fail("failed to remove '%s': %v", p, unwrapPath(err))
		}
	}
	return status
}

func cmdRm(c *cmd, args []string) int {
	set, paths, err := flags(args, "")
	if err != nil {
		return c.failErr(err)
	}
	status := 0
	for _, p := range paths {
		st, err := c.fs.Stat(c.abs(p), false)
		if err != nil {
			if !has(set, "f") {
				status = c.fail("cannot remove '%s': No such file or directory", p)
			}
			continue
		}
		if st.IsDir() && !has(set, "rR") {
			status = c.fail("cannot remove '%s': Is a directory", p)
			continue
		}
		if err := c.fs.Remove(c.abs(p), true); err != nil {
			status = c.fail("cannot remove '%s': %v", p, unwrapPath(err))
		}
	}
	return status
}

func cmdCp(c *cmd, args []string) int {
	set, paths, err := flags(args, "")
	if err != nil || len(paths) < 2 {
		return c.fail("usage: cp [-r] SRC... DST")
	}
	dst := c.abs(paths[len(paths)-1])
	dstSt, dstErr := c.fs.Stat(dst, true)
	srcs := paths[:len(paths)-1]
	if len(srcs) > 1 && (dstErr != nil || !dstSt.IsDir()) {
		return c.fail("target '%s' is not a directory", paths[len(paths)-1])
	}
	status := 0
	for _, s := range srcs {
		to := dst
		if dstErr == nil && dstSt.IsDir() {
			to = path.Join(dst, path.Base(c.abs(s)))
		}
		if err := c.copyTree(c.abs(s), to, has(set, "rR"), has(set, "pa")); err != nil {
			status = c.failErr(err)
		}
	}
	return status
}

func (c *cmd) copyTree(src, dst string, recursive, keep bool) error {
	st, err := c.fs.Stat(src, true)
	if err != nil {
		return err
	}
	if st.IsDir() {
		if !recursive {
			return fmt.Errorf("-r not specified; omitting directory '%s'", src)
		}
		if err := c.fs.MkdirAll(dst, st.Mode().Perm()); err != nil {
			return err
		}
		ents, err := c.fs.ReadDir(src)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if err := c.copyTree(path.Join(src, e.Name()), path.Join(dst, e.Name()), true, keep); err != nil {
				return err
			}
		}
		return nil
	}
	b, err := c.fs.ReadFile(src)
	if err != nil {
		return err
	}
	if err := c.fs.WriteFile(dst, b, st.Mode().Perm()); err != nil {
		return err
	}
	if keep {
		_ = c.fs.Chmod(dst, st.Mode())
		_ = c.fs.Chtimes(dst, st.ModTime())
	}
	return nil
}

func cmdMv(c *cmd, args []string) int {
	_, paths, err := flags(args, "")
	if err != nil || len(paths) < 2 {
		return c.fail("usage: mv SRC... DST")
	}
	dst := c.abs(paths[len(paths)-1])
	dstSt, dstErr := c.fs.Stat(dst, true)
	status := 0
	for _, s := range paths[:len(paths)-1] {
		to := dst
		if dstErr == nil && dstSt.IsDir() {
			to = path.Join(dst, path.Base(c.abs(s)))
		}
		if err := c.fs.Rename(c.abs(s), to); err != nil {
			status = c.fail("cannot move '%s': %v", s, unwrapPath(err))
		}
	}
	return status
}

func cmdLn(c *cmd, args []string) int {
	set, paths, err := flags(args, "")
	if err != nil || len(paths) != 2 {
		return c.fail("usage: ln [-s] [-f] TARGET NAME")
	}
	name := c.abs(paths[1])
	if st, err := c.fs.Stat(name, true); err == nil && st.IsDir() {
		name = path.Join(name, path.Base(paths[0]))
	}
	if has(set, "f") {
		_ = c.fs.Remove(name, false)
	}
	if has(set, "s") {
		err = c.fs.Symlink(paths[0], name)
	} else {
		err = c.fs.Link(c.abs(paths[0]), name)
	}
	if err != nil {
		return c.fail("failed to create link '%s': %v", paths[1], unwrapPath(err))
	}
	return 0
}

func cmdTouch(c *cmd, args []string) int {
	set, paths, err := flags(args, "d")
	if err != nil {
		return c.failErr(err)
	}
	t := c.fs.now()
	if d, ok := set['d']; ok {
		if t, err = parseDate(d); err != nil {
			return c.fail("invalid date format '%s'", d)
		}
	}
	status := 0
	for _, p := range paths {
		if _, err := c.fs.Stat(c.abs(p), true); err != nil {
			if h, err := c.fs.Open(c.abs(p), 0o101, 0o644); err != nil { // O_WRONLY|O_CREATE
				status = c.fail("cannot touch '%s': %v", p, unwrapPath(err))
				continue
			} else {
				h.Close()
			}
		}
		if err := c.fs.Chtimes(c.abs(p), t); err != nil {
			status = c.failErr(err)
		}
	}
	return status
}

func parseDate(s string) (time.Time, error) {
	if strings.HasPrefix(s, "@") {
		n, err := strconv.ParseInt(s[1:], 10, 64)
		return time.Unix(n, 0), err
	}
	for _, l := range []string{time.RFC3339Nano, "2006-01-02 15:04:05", "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(l, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("bad date")
}
