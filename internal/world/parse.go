package world

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// parseWorld reads a world file's JSON into a fileJSON in one pass over its bytes, each string
// unescaped once, straight into the bytes the world keeps. encoding/json read it in three to five
// passes (its scanner over the whole file, the value again to decode it, a Bytes' string a third
// time), through as many fresh copies of a world's files, and a worker and the trusted side read
// every world twice an exec between them.
//
// It reads what encoding/json reads, more strictly, and nothing it refuses (FuzzParseWorld
// checks both against encoding/json): keys match exactly (not in any case) and each is a field
// of the format; a string is UTF-8 with no lone surrogate escaped; an integer has no fraction or
// exponent and fits its field; a byte string (Bytes, and a file's data, a link's target and an
// entry's path) is not null, and a map entry is two of them.
// A key given twice is refused, and an array past the format's bounds is refused as its
// elements come. Null leaves any other field empty, and an array given as [] is empty but
// present, as encoding/json reads them into a fresh value. The data, target and path byte strings
// are []byte in their interfaces (fromWire reads them).
func parseWorld(b []byte) (fj fileJSON, err error) {
	p := &jsonParser{b: b}
	defer func() {
		if v := recover(); v != nil {
			se, ok := v.(syntaxError)
			if !ok {
				panic(v)
			}
			fj, err = fileJSON{}, se
		}
	}()
	p.object(func(key string) {
		switch key {
		case "format":
			fj.Format = p.string()
		case "version":
			fj.Version = int(p.intField(strconv.IntSize, true))
		case "cwd":
			fj.Cwd = p.bytes()
		case "turns":
			fj.Turns = int(p.intField(strconv.IntSize, true))
		case "vars":
			fj.Vars = nil
			p.array(maxVars, func() { fj.Vars = append(fj.Vars, p.variable()) }, func() { fj.Vars = []varJSON{} })
		case "functions":
			fj.Functions = p.named()
		case "aliases":
			fj.Aliases = p.named()
		case "options":
			fj.Options = nil
			p.array(maxVars, func() { fj.Options = append(fj.Options, p.string()) }, func() { fj.Options = []string{} })
		case "inodes":
			fj.Inodes = nil
			p.array(maxEntries, func() { fj.Inodes = append(fj.Inodes, p.inode()) }, func() { fj.Inodes = []inodeJSON{} })
		case "entries":
			fj.Entries = nil
			p.array(maxEntries, func() { fj.Entries = append(fj.Entries, p.entry()) }, func() { fj.Entries = []entryJSON{} })
		default:
			p.unknown(key)
		}
	})
	p.ws()
	if p.i != len(p.b) {
		p.fail("trailing data after the world")
	}
	return fj, nil
}

// syntaxError is a file parseWorld refuses: what, and at which byte.
type syntaxError struct {
	msg string
	off int
}

func (e syntaxError) Error() string { return e.msg + " at byte " + strconv.Itoa(e.off) }

type jsonParser struct {
	b []byte
	i int
}

func (p *jsonParser) fail(format string, a ...any) {
	panic(syntaxError{fmt.Sprintf(format, a...), p.i})
}

// unknown refuses a key that is no field of the format, naming at most its first 64 bytes.
func (p *jsonParser) unknown(key string) {
	p.fail("unknown field %q", short(key))
}

func (p *jsonParser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// peek is the next byte that is not white space.
func (p *jsonParser) peek() byte {
	p.ws()
	if p.i >= len(p.b) {
		p.fail("unexpected end of the file")
	}
	return p.b[p.i]
}

// null consumes a null, if that is what comes next.
func (p *jsonParser) null() bool {
	if p.peek() != 'n' {
		return false
	}
	if !bytes.HasPrefix(p.b[p.i:], []byte("null")) {
		p.fail("invalid literal")
	}
	p.i += 4
	return true
}

// object reads an object, calling field for each key with the parser at its value; field
// reads the value or fails.
func (p *jsonParser) object(field func(key string)) {
	if p.peek() != '{' {
		p.fail("expected an object")
	}
	p.i++
	if p.peek() == '}' {
		p.i++
		return
	}
	var seen []string // an object of the format has a handful of fields
	for {
		if p.peek() != '"' {
			p.fail("expected a key")
		}
		key := string(p.str())
		for _, k := range seen {
			if k == key {
				p.fail("field %q twice", k)
			}
		}
		if len(seen) < 16 {
			seen = append(seen, key)
		}
		if p.peek() != ':' {
			p.fail("expected ':' after a key")
		}
		p.i++
		field(key)
		switch p.peek() {
		case ',':
			p.i++
		case '}':
			p.i++
			return
		default:
			p.fail("expected ',' or '}' in an object")
		}
	}
}

// array reads null (nothing is called: the field stays nil) or an array of at most max
// elements, calling elem for each with the parser at it, and empty for [] (present, and empty).
// The bounds are the format's (maxEntries, maxVars), checked as the elements come, so a file of
// small elements cannot make the reader hold tens of times its size first. A variable's
// elements have no bound of the format's (a script makes as many as it likes): they cost a
// slice header or two each, as entries do, which the file's own bound limits.
func (p *jsonParser) array(max int, elem, empty func()) {
	if p.null() {
		return
	}
	if p.peek() != '[' {
		p.fail("expected an array")
	}
	p.i++
	if p.peek() == ']' {
		p.i++
		empty()
		return
	}
	for n := 1; ; n++ {
		if n > max {
			p.fail("more than %d elements in an array", max)
		}
		elem()
		switch p.peek() {
		case ',':
			p.i++
		case ']':
			p.i++
			return
		default:
			p.fail("expected ',' or ']' in an array")
		}
	}
}

// str reads a JSON string into fresh bytes: its escapes undone, refused unless it is UTF-8.
func (p *jsonParser) str() []byte {
	if p.peek() != '"' {
		p.fail("expected a string")
	}
	p.i++
	start := p.i
	j := start
	for j < len(p.b) && p.b[j] != '"' && p.b[j] != '\\' && p.b[j] >= 0x20 {
		j++
	}
	if !utf8.Valid(p.b[start:j]) {
		p.fail("a string that is not UTF-8")
	}
	if j < len(p.b) && p.b[j] == '"' { // no escape: one copy
		p.i = j + 1
		return append([]byte(nil), p.b[start:j]...)
	}
	// Escapes only shorten a string: its bytes up to the closing quote bound what it holds, so
	// it is unescaped into one buffer.
	end := j
	for end < len(p.b) && p.b[end] != '"' {
		if p.b[end] == '\\' {
			end++
		}
		end++
	}
	out := append(make([]byte, 0, min(end, len(p.b))-start), p.b[start:j]...)
	p.i = j
	for {
		run := p.i
		for p.i < len(p.b) && p.b[p.i] != '"' && p.b[p.i] != '\\' && p.b[p.i] >= 0x20 {
			p.i++
		}
		if !utf8.Valid(p.b[run:p.i]) {
			p.fail("a string that is not UTF-8")
		}
		out = append(out, p.b[run:p.i]...)
		if p.i >= len(p.b) {
			p.fail("unterminated string")
		}
		switch c := p.b[p.i]; {
		case c == '"':
			p.i++
			if cap(out) > 2*len(out)+64 { // mostly escapes: keep no more than the string
				out = bytes.Clone(out)
			}
			return out
		case c < 0x20:
			p.fail("a control character in a string")
		}
		// an escape
		if p.i+1 >= len(p.b) {
			p.fail("unterminated string")
		}
		e := p.b[p.i+1]
		p.i += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r := p.hex4()
			switch {
			case r >= 0xdc00 && r < 0xe000:
				p.fail("a lone surrogate in a string")
			case r >= 0xd800 && r < 0xdc00:
				if p.i+1 >= len(p.b) || p.b[p.i] != '\\' || p.b[p.i+1] != 'u' {
					p.fail("a lone surrogate in a string")
				}
				p.i += 2
				lo := p.hex4()
				if lo < 0xdc00 || lo >= 0xe000 {
					p.fail("a lone surrogate in a string")
				}
				r = 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00)
			}
			out = utf8.AppendRune(out, r)
		default:
			p.fail("invalid escape in a string")
		}
	}
}

func (p *jsonParser) hex4() rune {
	var r [2]byte
	if p.i+4 > len(p.b) {
		p.fail("unterminated string")
	}
	if _, err := hex.Decode(r[:], p.b[p.i:p.i+4]); err != nil {
		p.fail("invalid \\u escape in a string")
	}
	p.i += 4
	return rune(r[0])<<8 | rune(r[1])
}

// string reads a string field; null leaves it empty.
func (p *jsonParser) string() string {
	if p.null() {
		return ""
	}
	return string(p.str())
}

// bytes reads a byte string (Bytes): a JSON string, or {"b64": "..."}; never null.
func (p *jsonParser) bytes() []byte {
	switch p.peek() {
	case '"':
		return p.str()
	case '{':
		var b64 []byte
		seen := false
		p.object(func(key string) {
			if key != "b64" || p.peek() != '"' {
				p.fail("a byte string is a JSON string or {\"b64\": ...}")
			}
			b64, seen = p.str(), true
		})
		if !seen {
			p.fail("a byte string is a JSON string or {\"b64\": ...}")
		}
		out := make([]byte, base64.StdEncoding.DecodedLen(len(b64)))
		n, err := base64.StdEncoding.Decode(out, b64)
		if err != nil {
			p.fail("decode b64: %v", err)
		}
		return out[:n]
	}
	p.fail("a byte string is a JSON string or {\"b64\": ...}")
	return nil
}

// wire reads a data, target or path byte string into its interface (never null, as Bytes).
func (p *jsonParser) wire() any { return p.bytes() }

// integer reads an integer's digits: no fraction, no exponent.
func (p *jsonParser) integer() string {
	p.ws()
	start := p.i
	if p.i < len(p.b) && p.b[p.i] == '-' {
		p.i++
	}
	digits := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	if p.i == digits || p.b[digits] == '0' && p.i-digits > 1 {
		p.fail("expected an integer")
	}
	if p.i < len(p.b) && (p.b[p.i] == '.' || p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.fail("a number that is not an integer")
	}
	return string(p.b[start:p.i])
}

// intField reads an integer field of the given size in bits, signed or not (null: 0), refusing
// one out of its range as encoding/json does.
func (p *jsonParser) intField(bits int, signed bool) int64 {
	if p.null() {
		return 0
	}
	digits := p.integer()
	var v int64
	var err error
	if signed {
		v, err = strconv.ParseInt(digits, 10, bits)
	} else {
		var u uint64
		u, err = strconv.ParseUint(digits, 10, bits)
		v = int64(u)
	}
	if err != nil {
		p.fail("an integer out of range")
	}
	return v
}

func (p *jsonParser) bool() bool {
	switch {
	case p.null():
		return false
	case bytes.HasPrefix(p.b[p.i:], []byte("true")):
		p.i += 4
		return true
	case bytes.HasPrefix(p.b[p.i:], []byte("false")):
		p.i += 5
		return false
	}
	p.fail("expected true or false")
	return false
}

func (p *jsonParser) variable() varJSON {
	var v varJSON
	p.object(func(key string) {
		switch key {
		case "name":
			v.Name = p.string()
		case "kind":
			v.Kind = p.string()
		case "exported":
			v.Exported = p.bool()
		case "readonly":
			v.ReadOnly = p.bool()
		case "unset":
			v.Unset = p.bool()
		case "str":
			v.Str = p.bytes()
		case "list":
			v.List = nil
			p.array(maxFileBytes, func() { v.List = append(v.List, p.bytes()) }, func() { v.List = []Bytes{} })
		case "indexes":
			v.Indexes = nil
			p.array(maxFileBytes, func() { v.Indexes = append(v.Indexes, int(p.intField(strconv.IntSize, true))) }, func() { v.Indexes = []int{} })
		case "map":
			v.Map = nil
			p.array(maxFileBytes, func() {
				var kv [2]Bytes
				n := 0
				p.array(2, func() {
					kv[n] = p.bytes()
					n++
				}, func() {})
				if n != 2 {
					p.fail("a map entry is a key and a value")
				}
				v.Map = append(v.Map, kv)
			}, func() { v.Map = [][2]Bytes{} })
		default:
			p.unknown(key)
		}
	})
	return v
}

func (p *jsonParser) named() []funcJSON {
	var fs []funcJSON
	p.array(maxVars, func() {
		var f funcJSON
		p.object(func(key string) {
			switch key {
			case "name":
				f.Name = p.string()
			case "source":
				f.Source = p.bytes()
			default:
				p.unknown(key)
			}
		})
		fs = append(fs, f)
	}, func() { fs = []funcJSON{} })
	return fs
}

func (p *jsonParser) inode() inodeJSON {
	var n inodeJSON
	p.object(func(key string) {
		switch key {
		case "type":
			n.Type = p.string()
		case "mode":
			n.Mode = uint32(p.intField(32, false))
		case "mtime":
			n.Mtime = p.intField(64, true)
		case "data":
			n.Data = p.wire()
		case "target":
			n.Target = p.wire()
		default:
			p.unknown(key)
		}
	})
	return n
}

func (p *jsonParser) entry() entryJSON {
	var e entryJSON
	p.object(func(key string) {
		switch key {
		case "path":
			e.Path = p.wire()
		case "inode":
			e.Inode = int(p.intField(strconv.IntSize, true))
		default:
			p.unknown(key)
		}
	})
	return e
}
