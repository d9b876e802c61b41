package world

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// FormatName and FormatVersion identify a world file; docs/WORLDS.md describes it.
const (
	FormatName    = "forkbomb-world"
	FormatVersion = 1
)

// Decoder bounds: a hostile file is refused before it can make the loader allocate without end.
const (
	maxFileBytes = 1 << 30
	maxEntries   = 1 << 20
	maxVars      = 1 << 16
	maxDepth     = 256
)

// Bytes is a byte string in the file: a JSON string when it is valid UTF-8, else {"b64": "..."},
// so names and contents that are not UTF-8 survive byte for byte.
type Bytes []byte

// MarshalJSON implements json.Marshaler.
func (b Bytes) MarshalJSON() ([]byte, error) {
	if utf8.Valid(b) {
		return json.Marshal(string(b))
	}
	return json.Marshal(map[string]string{"b64": base64.StdEncoding.EncodeToString(b)})
}

// UnmarshalJSON implements json.Unmarshaler. Decode reads files with parseWorld; this is how
// encoding/json reads them, the reference FuzzParseWorld holds it to.
func (b *Bytes) UnmarshalJSON(d []byte) error {
	if len(d) > 0 && d[0] == '"' {
		var s string
		if err := json.Unmarshal(d, &s); err != nil {
			return err
		}
		*b = Bytes(s)
		return nil
	}
	var o struct {
		B64 *string `json:"b64"`
	}
	dec := json.NewDecoder(bytes.NewReader(d))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil || o.B64 == nil {
		return fmt.Errorf("a byte string is a JSON string or {\"b64\": ...}")
	}
	v, err := base64.StdEncoding.DecodeString(*o.B64)
	if err != nil {
		return fmt.Errorf("decode b64: %w", err)
	}
	*b = v
	return nil
}

type fileJSON struct {
	Format    string      `json:"format"`
	Version   int         `json:"version"`
	Cwd       Bytes       `json:"cwd"`
	Turns     int         `json:"turns"`
	Vars      []varJSON   `json:"vars"`
	Functions []funcJSON  `json:"functions"`
	Aliases   []funcJSON  `json:"aliases"`
	Options   []string    `json:"options"`
	Inodes    []inodeJSON `json:"inodes"`
	Entries   []entryJSON `json:"entries"`
}

type varJSON struct {
	Name     string     `json:"name"`
	Kind     string     `json:"kind"`
	Exported bool       `json:"exported,omitempty"`
	ReadOnly bool       `json:"readonly,omitempty"`
	Unset    bool       `json:"unset,omitempty"` // declared (declare -a x, export x) but not set
	Str      Bytes      `json:"str,omitempty"`
	List     []Bytes    `json:"list,omitempty"`
	Indexes  []int      `json:"indexes,omitempty"` // of a sparse indexed array: List[i] is element Indexes[i]
	Map      [][2]Bytes `json:"map,omitempty"`
}

type funcJSON struct {
	Name   string `json:"name"`
	Source Bytes  `json:"source"`
}

// The files' bytes — data, link targets, paths: nearly all of a world — are written in the
// form Bytes is, but held as a string or a b64JSON in an interface (wireBytes), which
// encoding/json writes in one pass: a json.Marshaler's output it scans again. parseWorld reads
// them back as []byte in the interface; encoding/json, as a string or a map (fromWire reads all
// three).
type inodeJSON struct {
	Type   string `json:"type"`  // dir, file, symlink
	Mode   uint32 `json:"mode"`  // POSIX permission bits, with 01000 sticky, 02000 setgid, 04000 setuid
	Mtime  int64  `json:"mtime"` // Unix nanoseconds
	Data   any    `json:"data,omitempty"`
	Target any    `json:"target,omitempty"`
}

type entryJSON struct {
	Path  any `json:"path"` // relative to /work, parents before children; "" is /work itself
	Inode int `json:"inode"`
}

// b64JSON is a byte string that is not UTF-8, as Bytes writes it.
type b64JSON struct {
	B64 string `json:"b64"`
}

// wireBytes is b as Bytes writes it: a string when it is UTF-8, else a b64JSON; nil when b is
// empty and may be left out.
func wireBytes(b []byte, omitEmpty bool) any {
	switch {
	case len(b) == 0 && omitEmpty:
		return nil
	case utf8.Valid(b):
		return string(b)
	}
	return b64JSON{B64: base64.StdEncoding.EncodeToString(b)}
}

// fromWire reads what wireBytes wrote, as encoding/json decoded it into an interface: a string,
// or an object whose one field is "b64", a string (nil: the field was absent).
func fromWire(v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case []byte: // parseWorld's
		return v, nil
	case string:
		return []byte(v), nil
	case map[string]any:
		if s, ok := v["b64"].(string); ok && len(v) == 1 {
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				return nil, fmt.Errorf("decode b64: %w", err)
			}
			return b, nil
		}
	}
	return nil, fmt.Errorf("a byte string is a JSON string or {\"b64\": ...}")
}

func toPosix(m fs.FileMode) uint32 {
	p := uint32(m.Perm())
	if m&fs.ModeSticky != 0 {
		p |= 0o1000
	}
	if m&fs.ModeSetgid != 0 {
		p |= 0o2000
	}
	if m&fs.ModeSetuid != 0 {
		p |= 0o4000
	}
	return p
}

func fromPosix(p uint32) fs.FileMode {
	m := fs.FileMode(p & 0o777)
	if p&0o1000 != 0 {
		m |= fs.ModeSticky
	}
	if p&0o2000 != 0 {
		m |= fs.ModeSetgid
	}
	if p&0o4000 != 0 {
		m |= fs.ModeSetuid
	}
	return m
}

// Encode writes the world: /work and the shell state. /tmp is not kept.
func (w *World) Encode() ([]byte, error) {
	fj := fileJSON{Format: FormatName, Version: FormatVersion, Cwd: Bytes(w.State.Cwd), Turns: w.State.Turns,
		Options: w.State.Options}
	for _, v := range w.State.Vars {
		fj.Vars = append(fj.Vars, v.toJSON())
	}
	for _, f := range w.State.Functions {
		fj.Functions = append(fj.Functions, funcJSON{Name: f.Name, Source: Bytes(f.Source)})
	}
	for _, a := range w.State.Aliases {
		fj.Aliases = append(fj.Aliases, funcJSON{Name: a.Name, Source: Bytes(a.Source)})
	}
	ids := map[*inode]int{}
	var walk func(rel string, n *inode)
	walk = func(rel string, n *inode) {
		id, seen := ids[n]
		if !seen {
			id = len(fj.Inodes)
			ids[n] = id
			ij := inodeJSON{Mode: toPosix(n.mode), Mtime: n.mtime.UnixNano()}
			switch n.kind {
			case kindDir:
				ij.Type = "dir"
			case kindFile:
				ij.Type, ij.Data = "file", wireBytes(n.data, true)
			case kindSymlink:
				ij.Type, ij.Target = "symlink", wireBytes([]byte(n.target), true)
			}
			fj.Inodes = append(fj.Inodes, ij)
		}
		fj.Entries = append(fj.Entries, entryJSON{Path: wireBytes([]byte(rel), false), Inode: id})
		if n.kind != kindDir {
			return
		}
		names := make([]string, 0, len(n.children))
		for name := range n.children {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			child := rel + "/" + name
			if rel == "" {
				child = name
			}
			walk(child, n.children[name])
		}
	}
	walk("", w.FS.root.children["work"])
	b, err := json.Marshal(fj)
	if err != nil {
		return nil, fmt.Errorf("encode world: %w", err)
	}
	return append(b, '\n'), nil
}

// tooLarge refuses a file past the format's bound.
func tooLarge(b []byte) error {
	if len(b) > maxFileBytes {
		return formatErr("file is %d bytes, more than %d", len(b), maxFileBytes)
	}
	return nil
}

// short is a value from a file as an error quotes it: its first 64 bytes.
func short(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

func formatErr(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrFormat, fmt.Sprintf(format, a...))
}

// Decode reads a world file, refusing anything malformed: unknown fields, a wrong version, a
// path with "." or ".." or an empty component, a child before its parent, a directory with two
// names, an inode nobody names, a size past maxSize (0: no limit).
func Decode(b []byte, maxSize int64) (*World, error) {
	if err := tooLarge(b); err != nil {
		return nil, err
	}
	fj, err := parseWorld(b)
	if err != nil {
		return nil, formatErr("%v", err)
	}
	return fj.world(maxSize)
}

// world checks what a world file holds and makes the world of it.
func (fj *fileJSON) world(maxSize int64) (*World, error) {
	if fj.Format != FormatName {
		return nil, formatErr("format is %q, want %q", short(fj.Format), FormatName)
	}
	if fj.Version != FormatVersion {
		return nil, formatErr("version %d; this forkbomb reads version %d", fj.Version, FormatVersion)
	}
	if len(fj.Entries) > maxEntries || len(fj.Inodes) > maxEntries || len(fj.Vars) > maxVars ||
		len(fj.Functions) > maxVars || len(fj.Aliases) > maxVars || len(fj.Options) > maxVars {
		return nil, formatErr("too many entries")
	}
	w := &World{FS: newFS(nil)}
	nodes := make([]*inode, len(fj.Inodes))
	var size int64
	for i, ij := range fj.Inodes {
		if ij.Mode&^0o7777 != 0 {
			return nil, formatErr("inode %d: mode %o", i, ij.Mode)
		}
		data, err := fromWire(ij.Data)
		if err != nil {
			return nil, formatErr("inode %d: data: %v", i, err)
		}
		target, err := fromWire(ij.Target)
		if err != nil {
			return nil, formatErr("inode %d: target: %v", i, err)
		}
		n := &inode{mode: fromPosix(ij.Mode), mtime: time.Unix(0, ij.Mtime)}
		switch ij.Type {
		case "dir":
			n.kind, n.children = kindDir, map[string]*inode{}
		case "file":
			n.kind, n.data = kindFile, data
			size += int64(len(data))
		case "symlink":
			if len(target) == 0 || bytes.IndexByte(target, 0) >= 0 {
				return nil, formatErr("inode %d: bad symlink target", i)
			}
			n.kind, n.target, n.mode = kindSymlink, string(target), 0o777
		default:
			return nil, formatErr("inode %d: type %q", i, short(ij.Type))
		}
		if ij.Type != "file" && len(data) > 0 || ij.Type != "symlink" && len(target) > 0 {
			return nil, formatErr("inode %d: data or target on a %s", i, ij.Type)
		}
		nodes[i] = n
	}
	if maxSize > 0 && size > maxSize {
		return nil, fmt.Errorf("%w: world holds %d bytes, limit %d", ErrLimit, size, maxSize)
	}
	w.FS.size = size
	if len(fj.Entries) == 0 {
		return nil, formatErr("the first entry must be the workspace root (path \"\")")
	}
	dirs := map[string]*inode{}
	for i, e := range fj.Entries {
		if e.Inode < 0 || e.Inode >= len(nodes) {
			return nil, formatErr("entry %d: inode %d out of range", i, e.Inode)
		}
		n := nodes[e.Inode]
		pb, err := fromWire(e.Path)
		if err != nil {
			return nil, formatErr("entry %d: path: %v", i, err)
		}
		p := string(pb)
		if i == 0 {
			if p != "" {
				return nil, formatErr("the first entry must be the workspace root (path \"\")")
			}
			if n.kind != kindDir {
				return nil, formatErr("the workspace root is not a directory")
			}
			n.nlink = 1
			w.FS.root.children["work"] = n
			dirs[""] = n
			continue
		}
		comps := strings.Split(p, "/")
		if len(comps) > maxDepth {
			return nil, formatErr("entry %d: deeper than %d", i, maxDepth)
		}
		for _, c := range comps {
			if c == "" || c == "." || c == ".." || strings.IndexByte(c, 0) >= 0 {
				return nil, formatErr("entry %d: bad path %q", i, short(p))
			}
		}
		parent := dirs[path.Dir(p)]
		if path.Dir(p) == "." {
			parent = dirs[""]
		}
		if parent == nil {
			return nil, formatErr("entry %d: %q comes before its directory", i, short(p))
		}
		name := comps[len(comps)-1]
		if parent.children[name] != nil {
			return nil, formatErr("entry %d: %q twice", i, short(p))
		}
		if n.kind == kindDir {
			if n.nlink > 0 {
				return nil, formatErr("entry %d: a directory with two names", i)
			}
			dirs[p] = n
		}
		n.nlink++
		parent.children[name] = n
	}
	for i, n := range nodes {
		if n.nlink == 0 {
			return nil, formatErr("inode %d has no name", i)
		}
	}
	st := State{Cwd: string(fj.Cwd), Turns: fj.Turns, Options: fj.Options}
	if !strings.HasPrefix(st.Cwd, "/") {
		return nil, formatErr("cwd %q is not absolute", short(st.Cwd))
	}
	for _, vj := range fj.Vars {
		v, err := vj.fromJSON()
		if err != nil {
			return nil, err
		}
		st.Vars = append(st.Vars, v)
	}
	for _, f := range fj.Functions {
		if !validName(f.Name) {
			return nil, formatErr("function name %q", short(f.Name))
		}
		st.Functions = append(st.Functions, Named{Name: f.Name, Source: string(f.Source)})
	}
	for _, a := range fj.Aliases {
		if !validName(a.Name) {
			return nil, formatErr("alias name %q", short(a.Name))
		}
		st.Aliases = append(st.Aliases, Named{Name: a.Name, Source: string(a.Source)})
	}
	for _, o := range fj.Options {
		if _, ok := knownOption(o); !ok {
			return nil, formatErr("option %q", short(o))
		}
	}
	w.State = st
	return w, nil
}

func validName(s string) bool {
	if s == "" || len(s) > 256 {
		return false
	}
	for i, r := range s {
		ok := r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9' ||
			r == '-' || r == '.' || r == ':'
		if !ok {
			return false
		}
	}
	return true
}
