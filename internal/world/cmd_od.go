package world

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

func init() { commands["od"] = cmdOd }

// odFormat is one of od's output types: a letter (o, x, d, u, c) and a size in bytes.
type odFormat struct {
	kind byte
	size int
}

// cmdOd is od with -c, -x, -o, -b, -d, -t TYPE (c, o1 o2 o4, x1 x2 x4, d1 d2 d4, u1 u2 u4) and
// -A d|o|x|n (-An: no offsets). Sixteen bytes a line, repeated lines shown as "*" (GNU's
// default), words read little-endian.
func cmdOd(c *cmd, args []string) int {
	set, files, err := flags(args, "tA")
	if err != nil {
		return c.fail("%v", err)
	}
	f := odFormat{'o', 2}
	switch {
	case has(set, "c"):
		f = odFormat{'c', 1}
	case has(set, "x"):
		f = odFormat{'x', 2}
	case has(set, "b"):
		f = odFormat{'o', 1}
	case has(set, "d"):
		f = odFormat{'u', 2}
	}
	if t, ok := set['t']; ok {
		if t == "c" {
			f = odFormat{'c', 1}
		} else {
			n := 4
			if len(t) > 1 {
				n, err = strconv.Atoi(t[1:])
			}
			if err != nil || len(t) < 1 || !strings.ContainsRune("oxdu", rune(t[0])) || (n != 1 && n != 2 && n != 4) {
				return c.fail("invalid type string '%s'", t)
			}
			f = odFormat{t[0], n}
		}
	}
	addr := "o"
	if a, ok := set['A']; ok {
		if a != "d" && a != "o" && a != "x" && a != "n" {
			return c.fail("invalid output address radix '%s'", a)
		}
		addr = a
	}
	in, st := c.inputs(files)
	var b bytes.Buffer
	offset := func(n int) {
		switch addr {
		case "o":
			fmt.Fprintf(&b, "%07o", n)
		case "d":
			fmt.Fprintf(&b, "%07d", n)
		case "x":
			fmt.Fprintf(&b, "%06x", n)
		}
	}
	var prev []byte
	starred := false
	for off := 0; off < len(in); off += 16 {
		line := in[off:min(off+16, len(in))]
		if prev != nil && len(line) == 16 && bytes.Equal(line, prev) {
			if !starred {
				b.WriteString("*\n")
				starred = true
			}
			continue
		}
		prev, starred = line, false
		offset(off)
		for i := 0; i < len(line); i += f.size {
			b.WriteString(f.field(line[i:min(i+f.size, len(line))]))
		}
		b.WriteByte('\n')
		if c.ctx.Err() != nil {
			break
		}
	}
	if addr != "n" {
		offset(len(in))
		b.WriteByte('\n')
	}
	c.out.Write(b.Bytes())
	return st
}

var odWidths = map[odFormat]int{
	{'o', 1}: 3, {'o', 2}: 6, {'o', 4}: 11, {'x', 1}: 2, {'x', 2}: 4, {'x', 4}: 8,
	{'d', 1}: 4, {'d', 2}: 6, {'d', 4}: 11, {'u', 1}: 3, {'u', 2}: 5, {'u', 4}: 10,
}

var odEscapes = map[byte]string{0: `\0`, '\a': `\a`, '\b': `\b`, '\f': `\f`, '\n': `\n`, '\r': `\r`, '\t': `\t`, '\v': `\v`}

// field formats one value (a short last one padded with zero bytes), with its leading space.
func (f odFormat) field(b []byte) string {
	if f.kind == 'c' {
		ch := b[0]
		if e, ok := odEscapes[ch]; ok {
			return fmt.Sprintf("%4s", e)
		}
		if ch >= 0x20 && ch < 0x7f {
			return fmt.Sprintf("%4c", ch)
		}
		return fmt.Sprintf(" %03o", ch)
	}
	var word [4]byte
	copy(word[:], b)
	var v uint64
	var sv int64
	switch f.size {
	case 1:
		v, sv = uint64(word[0]), int64(int8(word[0]))
	case 2:
		u := binary.LittleEndian.Uint16(word[:])
		v, sv = uint64(u), int64(int16(u))
	default:
		u := binary.LittleEndian.Uint32(word[:])
		v, sv = uint64(u), int64(int32(u))
	}
	w := odWidths[f]
	switch f.kind {
	case 'o':
		return fmt.Sprintf(" %0*o", w, v)
	case 'x':
		return fmt.Sprintf(" %0*x", w, v)
	case 'd':
		return fmt.Sprintf(" %*d", w, sv)
	}
	return fmt.Sprintf(" %*d", w, v)
}
