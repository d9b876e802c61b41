package world

import (
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
)

// A binary file's new bytes travel as git's "GIT binary patch" literal: zlib-compressed, then
// in lines of at most 52 bytes, each a length letter ('A'–'Z' for 1–26, 'a'–'z' for 27–52) and
// the bytes in git's base 85 (four bytes, zero-padded, as five characters).

const base85 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"

// unbase85 maps a character to its value plus one (0: not a base-85 character).
var unbase85 = func() (t [256]byte) {
	for i := 0; i < len(base85); i++ {
		t[base85[i]] = byte(i + 1)
	}
	return t
}()

// writeLiteral writes "literal N" and data's lines.
func writeLiteral(w *bytes.Buffer, data []byte) {
	var z bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
	zw.Write(data)
	zw.Close()
	fmt.Fprintf(w, "literal %d\n", len(data))
	for b := z.Bytes(); len(b) > 0; {
		n := min(len(b), 52)
		if n <= 26 {
			w.WriteByte(byte('A' + n - 1))
		} else {
			w.WriteByte(byte('a' + n - 27))
		}
		for i := 0; i < n; i += 4 {
			var acc uint32
			for k := range 4 {
				acc <<= 8
				if i+k < n {
					acc |= uint32(b[i+k])
				}
			}
			var enc [5]byte
			for k := 4; k >= 0; k-- {
				enc[k] = base85[acc%85]
				acc /= 85
			}
			w.Write(enc[:])
		}
		w.WriteByte('\n')
		b = b[n:]
	}
}

// readLiteral decodes a literal's lines (without the blank line that ends them) into exactly
// size bytes, size at most max.
func readLiteral(lines []string, size, max int64) ([]byte, error) {
	if size < 0 || size > max {
		return nil, fmt.Errorf("a binary file of %d bytes", size)
	}
	var z []byte
	for _, l := range lines {
		if len(l) < 6 {
			return nil, errors.New("a short binary line")
		}
		var n int
		switch c := l[0]; {
		case 'A' <= c && c <= 'Z':
			n = int(c-'A') + 1
		case 'a' <= c && c <= 'z':
			n = int(c-'a') + 27
		default:
			return nil, fmt.Errorf("a binary line's length %q", c)
		}
		enc := l[1:]
		if len(enc) != (n+3)/4*5 {
			return nil, errors.New("a binary line of the wrong length")
		}
		for i := 0; i < len(enc); i += 5 {
			var acc uint64
			for k := range 5 {
				v := unbase85[enc[i+k]]
				if v == 0 {
					return nil, fmt.Errorf("%q is not a base-85 character", enc[i+k])
				}
				acc = acc*85 + uint64(v-1)
			}
			if acc > 0xffffffff {
				return nil, errors.New("a base-85 group out of range")
			}
			for k := range 4 {
				if i/5*4+k < n {
					z = append(z, byte(acc>>(24-8*k)))
				}
			}
		}
	}
	zr, err := zlib.NewReader(bytes.NewReader(z))
	if err != nil {
		return nil, fmt.Errorf("a binary literal: %w", err)
	}
	out, err := io.ReadAll(io.LimitReader(zr, size+1))
	if err != nil {
		return nil, fmt.Errorf("a binary literal: %w", err)
	}
	if int64(len(out)) != size {
		return nil, fmt.Errorf("a binary literal of %d bytes, not %d", len(out), size)
	}
	return out, nil
}
