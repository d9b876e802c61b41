package record

import (
	"bytes"
	"unicode/utf8"
)

const (
	// maxRun is the longest run of backslashes read as one escape: four
	// levels of nested JSON strings. A longer run is not an escape, which
	// also keeps a text of a million backslashes linear to scan.
	maxRun = 16
	// matchBudget bounds the backtracking of one match attempt (a secret
	// holding backslashes can be spelled many ways). An attempt that runs
	// out fails closed: it redacts as much text as the longest spelling
	// could take.
	matchBudget = 1 << 14
)

// match returns the end of an occurrence of target t starting at text[i],
// or -1.
func match(text []byte, i int, t string, fold bool) int {
	budget := matchBudget
	e := matchAt(text, i, t, fold, &budget)
	if budget < 0 {
		return min(len(text), i+len(t)*(maxRun+12))
	}
	return e
}

// matchAt matches t's first character (a rune, or a byte of invalid
// UTF-8) at text[p] in any of its spellings, then the rest of t after it.
func matchAt(text []byte, p int, t string, fold bool, budget *int) int {
	if t == "" {
		return p
	}
	if *budget--; *budget < 0 || p >= len(text) {
		return -1
	}
	c, size := utf8.DecodeRuneInString(t)
	unit, rest := t[:size], t[size:]
	isByte := c == utf8.RuneError && size == 1
	try := func(q int) int { return matchAt(text, q, rest, fold, budget) }
	eq := func(v rune) bool {
		if isByte {
			return v == rune(unit[0])
		}
		return v == c || fold && v < utf8.RuneSelf && c < utf8.RuneSelf && lower(byte(v)) == lower(byte(c))
	}

	// literal
	if fold && size == 1 {
		if lower(text[p]) == lower(unit[0]) {
			if e := try(p + 1); e >= 0 {
				return e
			}
		}
	} else if bytes.HasPrefix(text[p:], []byte(unit)) {
		if e := try(p + size); e >= 0 {
			return e
		}
	}
	if c == ' ' && text[p] == '+' {
		if e := try(p + 1); e >= 0 {
			return e
		}
	}

	// percent-encoding: each byte of the unit as %XX or literal
	if text[p] == '%' {
		q := p
		for k := 0; k < len(unit) && q >= 0; k++ {
			v, ok := hexAt(text, q+1, 2)
			switch {
			case q >= len(text):
				q = -1
			case text[q] == '%' && ok && eqByte(byte(v), unit[k], fold):
				q += 3
			case text[q] == unit[k]:
				q++
			default:
				q = -1
			}
		}
		if q > p {
			if e := try(q); e >= 0 {
				return e
			}
		}
	}

	if text[p] != '\\' {
		return -1
	}
	k := run(text, p)
	if k > maxRun {
		return -1
	}
	if c == '\\' {
		for j := k; j >= 1; j-- {
			if e := try(p + j); e >= 0 {
				return e
			}
		}
	}
	q := p + k
	if q >= len(text) {
		return -1
	}
	switch text[q] {
	case 'u':
		v, ok := hexAt(text, q+1, 4)
		if !ok {
			return -1
		}
		if eq(v) {
			return try(q + 5)
		}
		if v >= 0xD800 && v < 0xDC00 && c > 0xFFFF {
			q2 := q + 5
			if k2 := run(text, q2); k2 >= 1 && k2 <= maxRun && q2+k2 < len(text) && text[q2+k2] == 'u' {
				lo, ok := hexAt(text, q2+k2+1, 4)
				if ok && lo >= 0xDC00 && lo < 0xE000 && (v-0xD800)<<10+(lo-0xDC00)+0x10000 == c {
					return try(q2 + k2 + 5)
				}
			}
		}
	case 'U':
		if v, ok := hexAt(text, q+1, 8); ok && eq(v) {
			return try(q + 9)
		}
	case 'x':
		if v, ok := hexAt(text, q+1, 2); ok && eq(v) {
			return try(q + 3)
		}
	case 'n', 't', 'r', 'b', 'f':
		if eq(rune(control(text[q]))) {
			return try(q + 1)
		}
	default:
		// \/ \" \' and the like: punctuation after a backslash is itself
		if !isByte && c < utf8.RuneSelf && !isAlnum(byte(c)) && text[q] == byte(c) {
			return try(q + 1)
		}
	}
	return -1
}

// run counts the backslashes at text[p:], up to maxRun+1.
func run(text []byte, p int) int {
	k := 0
	for p+k < len(text) && text[p+k] == '\\' && k <= maxRun {
		k++
	}
	return k
}

// hexAt reads n hex digits (either case) at text[p:].
func hexAt(text []byte, p, n int) (rune, bool) {
	if p < 0 || p+n > len(text) {
		return 0, false
	}
	var v rune
	for _, b := range text[p : p+n] {
		switch {
		case b >= '0' && b <= '9':
			v = v<<4 | rune(b-'0')
		case b >= 'a' && b <= 'f':
			v = v<<4 | rune(b-'a'+10)
		case b >= 'A' && b <= 'F':
			v = v<<4 | rune(b-'A'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

func eqByte(a, b byte, fold bool) bool {
	return a == b || fold && lower(a) == lower(b)
}

func lower(b byte) byte {
	if b >= 'A' && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}

func isAlnum(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// control is the character of a one-letter escape (\n, \t, \r, \b, \f).
func control(letter byte) byte {
	switch letter {
	case 'n':
		return '\n'
	case 't':
		return '\t'
	case 'r':
		return '\r'
	case 'b':
		return '\b'
	}
	return '\f'
}

// escapedAt is the character an escape at text[p:] stands for (the high
// half of a surrogate pair stands for itself), or -1.
func escapedAt(text []byte, p int) rune {
	if text[p] != '\\' {
		return -1
	}
	k := run(text, p)
	q := p + k
	if k > maxRun || q >= len(text) {
		return -1
	}
	switch l := text[q]; l {
	case 'u':
		v, ok := hexAt(text, q+1, 4)
		if ok {
			return v
		}
	case 'U':
		v, ok := hexAt(text, q+1, 8)
		if ok {
			return v
		}
	case 'x':
		v, ok := hexAt(text, q+1, 2)
		if ok {
			return v
		}
	case 'n', 't', 'r', 'b', 'f':
		return rune(control(l))
	default:
		return rune(l)
	}
	return -1
}

func eqRune(a, b rune, fold bool) bool {
	return a == b || fold && a < utf8.RuneSelf && b < utf8.RuneSelf && lower(byte(a)) == lower(byte(b))
}
