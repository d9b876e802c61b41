package world

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
)

func cmdDu(c *cmd, args []string) int {
	set, paths, _ := flags(args, "")
	if len(paths) == 0 {
		paths = []string{"."}
	}
	for _, p := range paths {
		var total int64
		var walk func(a string)
		walk = func(a string) {
			st, err := c.fs.Stat(a, false)
			if err != nil {
				return
			}
			total += st.Size()
			if st.IsDir() {
				ents, _ := c.fs.ReadDir(a)
				for _, e := range ents {
					walk(path.Join(a, e.Name()))
				}
			}
		}
		walk(c.abs(p))
		if has(set, "b") {
			fmt.Fprintf(c.out, "%d\t%s\n", total, p)
		} else {
			fmt.Fprintf(c.out, "%d\t%s\n", (total+1023)/1024, p)
		}
	}
	return 0
}

func cmdTree(c *cmd, args []string) int {
	root := "."
	if len(args) > 0 {
		root = args[len(args)-1]
	}
	fmt.Fprintln(c.out, root)
	dirs, files := 0, 0
	var walk func(a, prefix string)
	walk = func(a, prefix string) {
		ents, _ := c.fs.ReadDir(a)
		for i, e := range ents {
			branch, next := "├── ", "│   "
			if i == len(ents)-1 {
				branch, next = "└── ", "    "
			}
			fmt.Fprintln(c.out, prefix+branch+e.Name())
			if e.IsDir() {
				dirs++
				walk(path.Join(a, e.Name()), prefix+next)
			} else {
				files++
			}
		}
	}
	walk(c.abs(root), "")
	fmt.Fprintf(c.out, "\n%d directories, %d files\n", dirs, files)
	return 0
}

func cmdBasename(c *cmd, args []string) int {
	if len(args) == 0 {
		return c.fail("missing operand")
	}
	b := path.Base(args[0])
	if len(args) > 1 {
		b = strings.TrimSuffix(b, args[1])
	}
	fmt.Fprintln(c.out, b)
	return 0
}

func cmdDirname(c *cmd, args []string) int {
	for _, a := range args {
		fmt.Fprintln(c.out, path.Dir(a))
	}
	return 0
}

func cmdRealpath(c *cmd, args []string) int {
	status := 0
	for _, a := range args {
		r, err := c.fs.Realpath(c.abs(a))
		if err != nil {
			status = c.fail("%s: %v", a, unwrapPath(err))
			continue
		}
		fmt.Fprintln(c.out, r)
	}
	return status
}

func cmdReadlink(c *cmd, args []string) int {
	set, paths, _ := flags(args, "")
	status := 0
	for _, a := range paths {
		var r string
		var err error
		if has(set, "fe") {
			r, err = c.fs.Realpath(c.abs(a))
		} else {
			r, err = c.fs.Readlink(c.abs(a))
		}
		if err != nil {
			status = 1
			continue
		}
		fmt.Fprintln(c.out, r)
	}
	return status
}

func cmdWhich(c *cmd, args []string) int {
	status := 0
	for _, a := range args {
		if commands[a] == nil {
			status = 1
			continue
		}
		fmt.Fprintln(c.out, "/bin/"+a)
	}
	return status
}

// Realpath resolves every symlink in p.
func (f *FS) Realpath(p string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, dirPath, name, n, err := f.lookup(p, true)
	if err != nil {
		return "", err
	}
	if n == nil {
		return "", perr("realpath", p, fs.ErrNotExist)
	}
	if name == "" {
		return "/", nil
	}
	// lookup followed the final link; find where it ended by walking the resolved parent.
	return resolvedName(f, dirPath, name, n), nil
}

func resolvedName(f *FS, dirPath, name string, n *inode) string {
	if dir, _ := f.get(dirPath, true, "realpath"); dir != nil && dir.children[name] == n {
		return path.Join(dirPath, name)
	}
	// The last hop ended elsewhere; search its parent directory chain for n.
	var found string
	var walk func(p string, d *inode)
	walk = func(p string, d *inode) {
		names := make([]string, 0, len(d.children))
		for k := range d.children {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			if found != "" {
				return
			}
			ch := d.children[k]
			if ch == n {
				found = path.Join(p, k)
				return
			}
			if ch.kind == kindDir {
				walk(path.Join(p, k), ch)
			}
		}
	}
	walk("/", f.root)
	return found
}
