package record

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/forkbomb/forkbomb/internal/event"
)

// MinSecretLen is the shortest credential the record accepts. Redacting a
// shorter value everywhere it occurs would shred ordinary text (a one-byte
// "secret" would take every "1" with it), and ignoring it would write it in
// clear, so a run refuses to start with one (ErrShortSecret).
const MinSecretLen = 8

// redactedMark replaces every occurrence of a secret.
const redactedMark = "[redacted]"

// A redactor finds secrets in text in every form the record's writers can
// produce or a model can write on purpose with a standard encoding:
//
//   - raw bytes;
//   - any character escaped the ways JSON allows (\uXXXX in either case of
//     hex, a UTF-16 surrogate pair, \/, \", \\, \n …), and the same escapes
//     nested (\\u0061, a JSON string holding JSON), plus the \xHH and \U
//     escapes of other languages;
//   - percent-encoding (%XX in either case, + for a space);
//   - base64, standard and URL alphabets, padded or not, at any of the three
//     byte alignments inside a longer encoded text;
//   - hex, in either case.
//
// The forms combine (a base64 form JSON-escaped is found). What it cannot
// find is any other transformation by a writer that knows the secret
// (reversed, split across two writes, XORed): see docs/RECORD.md.
type redactor struct {
	forms []string // targets: the secret and its encodings
	fold  []bool   // forms[i] compares ASCII letters case-insensitively (hex)
	first []rune   // forms[i]'s first character
	// byFirst lists the forms whose first byte is the index, literally;
	// the scan tries only those, and at a backslash, a percent sign or a
	// plus sign every form whose first character that escape can spell.
	byFirst [256][]int
}

func newRedactor(secrets []string) *redactor {
	rd := &redactor{}
	seen := map[string]bool{}
	add := func(t string, fold bool) {
		if t == "" || seen[t] {
			return
		}
		seen[t] = true
		f := len(rd.forms)
		rd.forms = append(rd.forms, t)
		rd.fold = append(rd.fold, fold)
		r, _ := utf8.DecodeRuneInString(t)
		rd.first = append(rd.first, r)
		c := t[0]
		rd.byFirst[c] = append(rd.byFirst[c], f)
		if fold && lower(c) != c {
			rd.byFirst[lower(c)] = append(rd.byFirst[lower(c)], f)
		} else if fold && c >= 'a' && c <= 'z' {
			rd.byFirst[c-'a'+'A'] = append(rd.byFirst[c-'a'+'A'], f)
		}
	}
	for _, s := range secrets {
		if s == "" {
			continue
		}
		add(s, false)
		add(hex.EncodeToString([]byte(s)), true)
		for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
			for _, core := range base64Cores(s, enc) {
				add(core, false)
			}
		}
	}
	return rd
}

// base64Cores returns, for each of the three byte offsets a secret can have
// inside a longer base64 text, the characters that depend on the secret's
// bytes alone: whatever surrounds it, one of them is in the encoded text.
func base64Cores(s string, enc *base64.Encoding) []string {
	var out []string
	n := len(s)
	for k := 0; k < 3; k++ {
		buf := make([]byte, k+n)
		copy(buf[k:], s)
		e := enc.EncodeToString(buf)
		lo, hi := (8*k+5)/6, 8*(k+n)/6
		if hi > lo {
			out = append(out, e[lo:hi])
		}
	}
	return out
}

// text returns b with every form of every secret replaced by redactedMark,
// and whether anything was replaced.
func (rd *redactor) text(b []byte) ([]byte, bool) {
	if len(rd.forms) == 0 {
		return b, false
	}
	var out []byte
	last := 0
	for i := 0; i < len(b); {
		c := b[i]
		if len(rd.byFirst[c]) == 0 && c != '\\' && c != '%' && c != '+' {
			i++
			continue
		}
		best := -1
		try := func(f int) {
			if e := match(b, i, rd.forms[f], rd.fold[f]); e > best {
				best = e
			}
		}
		for _, f := range rd.byFirst[c] {
			// most candidates fail on their second byte: look before matching
			if t := rd.forms[f]; len(t) > 1 && i+1 < len(b) {
				if n := b[i+1]; !eqByte(n, t[1], rd.fold[f]) && n != '\\' && n != '%' && n != '+' {
					continue
				}
			}
			try(f)
		}
		switch c {
		case '\\':
			if esc := escapedAt(b, i); esc >= 0 {
				for f, first := range rd.first {
					if eqRune(esc, first, rd.fold[f]) || first == '\\' || first > 0xFFFF {
						try(f)
					}
				}
			}
		case '%':
			if v, ok := hexAt(b, i+1, 2); ok {
				for _, f := range rd.byFirst[byte(v)] {
					try(f)
				}
			}
		case '+':
			for _, f := range rd.byFirst[' '] {
				try(f)
			}
		}
		if best <= i {
			i++
			continue
		}
		out = append(append(out, b[last:i]...), redactedMark...)
		i, last = best, best
	}
	if out == nil {
		return b, false
	}
	return append(out, b[last:]...), true
}

func (rd *redactor) str(s string) string {
	if b, ok := rd.text([]byte(s)); ok {
		return string(b)
	}
	return s
}

// value returns a copy of v, as JSON would encode it, with every string
// (and map key) redacted: the structured values are cleaned before they
// are encoded, so no escaping the encoder chooses can carry a secret past
// the redactor. A json.RawMessage is decoded and cleaned the same way (a
// model's tool-call arguments may spell a key with \u escapes); one that is
// not valid JSON becomes a redacted string.
func (rd *redactor) value(v any) any {
	switch x := v.(type) {
	case nil, bool, int, int64, float64, json.Number:
		return x
	case string:
		return rd.str(x)
	case []string:
		out := make([]string, len(x))
		for i, s := range x {
			out[i] = rd.str(s)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = rd.value(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[rd.str(k)] = rd.value(e)
		}
		return out
	case json.RawMessage:
		if g, ok := decodeGeneric(x); ok {
			return rd.value(g)
		}
		return rd.str(string(x))
	case []byte:
		return rd.str(string(x))
	case error:
		return rd.str(x.Error())
	}
	b, err := json.Marshal(v)
	if err != nil {
		return rd.str(fmt.Sprint(v))
	}
	if g, ok := decodeGeneric(b); ok {
		return rd.value(g)
	}
	return rd.str(string(b))
}

// decodeGeneric decodes JSON into maps, slices, strings and json.Numbers
// (numbers keep their exact text).
func decodeGeneric(b []byte) (any, bool) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil || d.More() {
		return nil, false
	}
	return v, true
}

// run returns a copy of r with every free-text field redacted.
func (rd *redactor) run(r Run) Run {
	r.ID, r.Task, r.Engine, r.Model = rd.str(r.ID), rd.str(r.Task), rd.str(r.Engine), rd.str(r.Model)
	r.Test, r.Repo, r.Base, r.Status = rd.str(r.Test), rd.str(r.Repo), rd.str(r.Base), event.RunStatus(rd.str(string(r.Status)))
	if r.Agent != nil {
		r.Agent = rd.value(r.Agent).([]string)
	}
	if r.Fork != nil {
		forks := make([]Fork, len(r.Fork))
		for i, f := range r.Fork {
			f.State, f.Verdict, f.Reason = event.ForkState(rd.str(string(f.State))), event.Verdict(rd.str(string(f.Verdict))), rd.str(f.Reason)
			if f.Findings != nil {
				f.Findings = rd.value(f.Findings).([]string)
			}
			if f.Warnings != nil {
				f.Warnings = rd.value(f.Warnings).([]string)
			}
			forks[i] = f
		}
		r.Fork = forks
	}
	if r.Winner != nil {
		w := *r.Winner
		r.Winner = &w
	}
	return r
}
