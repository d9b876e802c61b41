package world

import (
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
)

func cmdStat(c *cmd, args []string) int {
	set, paths, err := flags(args, "c")
	if err != nil {
		return c.failErr(err)
	}
	status := 0
	for _, p := range paths {
		st, err := c.fs.Stat(c.abs(p), has(set, "L"))
		if err != nil {
			status = c.fail("cannot stat '%s': %v", p, unwrapPath(err))
			continue
		}
		n := st.Sys().(*inode)
		if f, ok := set['c']; ok {
			r := strings.NewReplacer("%n", p, "%s", strconv.FormatInt(st.Size(), 10),
				"%a", strconv.FormatUint(uint64(toPosix(st.Mode())), 8), "%A", st.Mode().String(),
				"%Y", strconv.FormatInt(st.ModTime().Unix(), 10), "%h", strconv.Itoa(n.nlink), "%F", fileType(st))
			fmt.Fprintln(c.out, r.Replace(f))
			continue
		}
		fmt.Fprintf(c.out, "  File: %s\n  Size: %d\t%s\nAccess: (%04o/%s)  Links: %d\nModify: %s\n", p, st.Size(),
			fileType(st), toPosix(st.Mode()), st.Mode(), n.nlink, st.ModTime().UTC().Format("2006-01-02 15:04:05.000000000 -0700"))
	}
	return status
}

func fileType(st fs.FileInfo) string {
	switch {
	case st.IsDir():
		return "directory"
	case st.Mode()&fs.ModeSymlink != 0:
		return "symbolic link"
	case st.Size() == 0:
		return "regular empty file"
	}
	return "regular file"
}

func cmdChmod(c *cmd, args []string) int {
	if len(args) < 2 {
		return c.fail("usage: chmod MODE FILE...")
	}
	status := 0
	for _, p := range args[1:] {
		st, err := c.fs.Stat(c.abs(p), true)
		if err != nil {
			status = c.fail("cannot access '%s': %v", p, unwrapPath(err))
			continue
		}
		mode, err := parseMode(args[0], st.Mode())
		if err != nil {
			return c.fail("invalid mode: '%s'", args[0])
		}
		if err := c.fs.Chmod(c.abs(p), mode); err != nil {
			status = c.failErr(err)
		}
	}
	return status
}

// parseMode reads an octal mode or a symbolic one ("+x", "u+rw,go-w").
func parseMode(s string, cur fs.FileMode) (fs.FileMode, error) {
	if v, err := strconv.ParseUint(s, 8, 32); err == nil {
		return fromPosix(uint32(v)), nil
	}
	m := toPosix(cur)
	for _, clause := range strings.Split(s, ",") {
		i := strings.IndexAny(clause, "+-=")
		if i < 0 {
			return 0, fmt.Errorf("bad mode")
		}
		who, op, perms := clause[:i], clause[i], clause[i+1:]
		var mask uint32
		if who == "" || strings.Contains(who, "a") {
			mask = 0o777
		}
		for _, w := range who {
			switch w {
			case 'u':
				mask |= 0o700
			case 'g':
				mask |= 0o070
			case 'o':
				mask |= 0o007
			}
		}
		var bits uint32
		for _, p := range perms {
			switch p {
			case 'r':
				bits |= 0o444
			case 'w':
				bits |= 0o222
			case 'x':
				bits |= 0o111
			default:
				return 0, fmt.Errorf("bad mode")
			}
		}
		bits &= mask
		switch op {
		case '+':
			m |= bits
		case '-':
			m &^= bits
		case '=':
			m = m&^mask | bits
		}
	}
	return fromPosix(m), nil
}

func cmdFind(c *cmd, args []string) int {
	roots := []string{}
	for len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		roots, args = append(roots, args[0]), args[1:]
	}
	if len(roots) == 0 {
		roots = []string{"."}
	}
	var namePat, typ string
	maxDepth := -1
	for i := 0; i < len(args); i++ {
		if i+1 >= len(args) {
			return c.fail("missing argument to '%s'", args[i])
		}
		switch args[i] {
		case "-name":
			namePat = args[i+1]
		case "-type":
			typ = args[i+1]
		case "-maxdepth":
			maxDepth, _ = strconv.Atoi(args[i+1])
		default:
			return c.fail("unknown predicate '%s'", args[i])
		}
		i++
	}
	status := 0
	var walk func(shown, abs string, depth int)
	walk = func(shown, abs string, depth int) {
		st, err := c.fs.Stat(abs, false)
		if err != nil {
			status = c.fail("'%s': %v", shown, unwrapPath(err))
			return
		}
		ok := true
		if namePat != "" {
			m, _ := path.Match(namePat, path.Base(abs))
			ok = m
		}
		switch typ {
		case "f":
			ok = ok && st.Mode().IsRegular()
		case "d":
			ok = ok && st.IsDir()
		case "l":
			ok = ok && st.Mode()&fs.ModeSymlink != 0
		}
		if ok {
			fmt.Fprintln(c.out, shown)
		}
		if !st.IsDir() || maxDepth >= 0 && depth >= maxDepth {
			return
		}
		ents, _ := c.fs.ReadDir(abs)
		for _, e := range ents {
			walk(strings.TrimSuffix(shown, "/")+"/"+e.Name(), path.Join(abs, e.Name()), depth+1)
		}
	}
	for _, r := range roots {
		walk(r, c.abs(r), 0)
	}
	return status
}
