package record

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"testing"
	"unicode/utf16"
)

// testSecrets are credentials shaped to hit every escaping rule: the
// characters JSON escapes by default (& < > " \ /), a quote of another
// language, non-ASCII text and a rune outside the BMP (a surrogate pair in
// \u form), and a plain ASCII key.
var testSecrets = map[string]string{
	"specials": `sk-&<>"\/'Zq9!x-ab`,
	"unicode":  "ключ🔑секрет-42",
	"plain":    "sk-ant-api03-AbCdEf0123456789",
	"spaces":   "correct horse+battery staple",
}

// uEscape spells every character of s as \uXXXX (a surrogate pair above
// U+FFFF); hexCase picks the case of each hex digit.
func uEscape(s string, upper func(i int) bool) string {
	var b strings.Builder
	i := 0
	for _, r := range s {
		for _, u := range utf16.Encode([]rune{r}) {
			if upper(i) {
				fmt.Fprintf(&b, `\u%04X`, u)
			} else {
				fmt.Fprintf(&b, `\u%04x`, u)
			}
			i++
		}
	}
	return b.String()
}

func jsonInner(s string, html bool) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(html)
	enc.Encode(s)
	out := strings.TrimSpace(buf.String())
	return out[1 : len(out)-1]
}

// spellings are the forms of s a record file must not hold: every way JSON
// may spell it, nested JSON, base64 at each alignment, hex, and URL
// encodings. The tests write them and look for them.
func spellings(s string) map[string]string {
	m := map[string]string{
		"raw":                 s,
		"json (html escapes)": jsonInner(s, true),
		"json":                jsonInner(s, false),
		`\u lower`:            uEscape(s, func(int) bool { return false }),
		`\u upper`:            uEscape(s, func(int) bool { return true }),
		`\u mixed`:            uEscape(s, func(i int) bool { return i%2 == 0 }),
		`json \/`:             strings.ReplaceAll(jsonInner(s, false), "/", `\/`),
		"json in json":        jsonInner(jsonInner(s, true), true),
		`\u in json`:          jsonInner(uEscape(s, func(int) bool { return false }), false),
		"hex":                 hex.EncodeToString([]byte(s)),
		"HEX":                 strings.ToUpper(hex.EncodeToString([]byte(s))),
		"query escape":        url.QueryEscape(s),
		"path escape":         url.PathEscape(s),
	}
	var pct strings.Builder
	for _, c := range []byte(s) {
		fmt.Fprintf(&pct, "%%%02x", c)
	}
	m["every byte %xx"] = pct.String()
	for prefix := 0; prefix < 3; prefix++ {
		blob := append(bytes.Repeat([]byte{'~'}, prefix), s...)
		blob = append(blob, "~~"...)
		for name, enc := range map[string]*base64.Encoding{
			"std": base64.StdEncoding, "url": base64.URLEncoding, "raw std": base64.RawStdEncoding, "raw url": base64.RawURLEncoding,
		} {
			m[fmt.Sprintf("base64 %s at +%d", name, prefix)] = enc.EncodeToString(blob)
		}
		m[fmt.Sprintf("base64 at +%d in json", prefix)] = strings.ReplaceAll(base64.StdEncoding.EncodeToString(blob), "/", `\/`)
	}
	m["base64 alone"] = base64.StdEncoding.EncodeToString([]byte(s))
	return m
}

// leaks reports which spellings of s are in b, also inside every JSON
// string b holds (a line of events.jsonl, run.json, verdict.json) decoded.
func leaks(b []byte, s string) []string {
	var found []string
	look := func(text []byte, where string) {
		for name, sp := range spellings(s) {
			if bytes.Contains(text, []byte(sp)) {
				found = append(found, where+name)
			}
		}
	}
	look(b, "")
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, ok := decodeGeneric(line); ok {
			walkStrings(v, func(str string) { look([]byte(str), "decoded: ") })
		}
	}
	if v, ok := decodeGeneric(b); ok {
		walkStrings(v, func(str string) { look([]byte(str), "decoded: ") })
	}
	sort.Strings(found)
	return found
}

func walkStrings(v any, f func(string)) {
	switch x := v.(type) {
	case string:
		f(x)
	case []any:
		for _, e := range x {
			walkStrings(e, f)
		}
	case map[string]any:
		for k, e := range x {
			f(k)
			walkStrings(e, f)
		}
	}
}

// TestRedactSpellings puts each spelling of each secret in text and checks
// that none is left; the positive control is the same check on the text
// without redaction, which must find the spelling.
func TestRedactSpellings(t *testing.T) {
	t.Parallel()
	for sname, secret := range testSecrets {
		rd := newRedactor([]string{secret})
		off := newRedactor(nil)
		for name, sp := range spellings(secret) {
			t.Run(sname+"/"+name, func(t *testing.T) {
				t.Parallel()
				in := []byte("before " + sp + " after")
				if control, _ := off.text(in); len(leaks(control, secret)) == 0 {
					t.Fatalf("positive control: the check does not see %q in %q", name, control)
				}
				out, ok := rd.text(in)
				if !ok {
					t.Errorf("nothing redacted in %q", in)
				}
				if l := leaks(out, secret); len(l) > 0 {
					t.Errorf("%q left %v in %q", name, l, out)
				}
				if !bytes.HasPrefix(out, []byte("before ")) || !bytes.HasSuffix(out, []byte(" after")) {
					t.Errorf("text around the secret changed: %q", out)
				}
			})
		}
	}
}

// TestRedactKeepsText checks that redaction does not shred ordinary text:
// pieces of a secret, its length in other words, and numbers stay.
func TestRedactKeepsText(t *testing.T) {
	t.Parallel()
	rd := newRedactor([]string{"abcdefgh12", `sk-&<>"\/'Zq9!x-ab`})
	for _, text := range []string{
		"abcdefgh1 and bcdefgh12 and abcdefgh",
		`a plain line with "quotes", \\ backslashes \n and 1 2 3`,
		"sk-&<>\"\\/'Zq9!x-a", // one byte short
		`{"v":1,"data":{"n":12,"s":"\u0061bcdefgh"}}`,
		strings.Repeat(`\`, 1000) + "abcdefgh",
		"%61%62%63 + spaces + 6162636465666768",
	} {
		t.Run(text[:min(len(text), 20)], func(t *testing.T) {
			t.Parallel()
			if out, ok := rd.text([]byte(text)); ok {
				t.Errorf("redacted ordinary text %q to %q", text, out)
			}
		})
	}
}

// TestRedactHostileText checks that text built to make the matcher
// backtrack (long runs of backslashes around a secret that holds
// backslashes) is still redacted; the test's own deadline bounds it.
func TestRedactHostileText(t *testing.T) {
	t.Parallel()
	secret := `a\b\c\d\e\f\g\h`
	rd := newRedactor([]string{secret})
	var b strings.Builder
	for i := 0; i < 2000; i++ {
		b.WriteString(strings.ReplaceAll(secret, `\`, strings.Repeat(`\`, 1+i%20)))
	}
	b.WriteString(" " + jsonInner(secret, false) + " ")
	b.WriteString(strings.Repeat(`\`, 1<<20))
	out, _ := rd.text([]byte(b.String()))
	if l := leaks(out, secret); len(l) > 0 {
		t.Errorf("left %v", l)
	}
}

// TestRedactValue checks redaction before encoding: strings, map keys,
// errors, nested values and raw JSON (valid, with \u escapes, and not JSON
// at all), with the encoded result checked for every spelling.
func TestRedactValue(t *testing.T) {
	t.Parallel()
	secret := testSecrets["specials"]
	u := uEscape(secret, func(i int) bool { return i%3 == 0 })
	for _, tc := range []struct {
		name string
		v    any
	}{
		{"string", "key=" + secret},
		{"map key", map[string]any{secret: 1}},
		{"error", fmt.Errorf("upstream said %s", secret)},
		{"string slice", []string{"x", secret}},
		{"struct", struct{ Header string }{"x-api-key: " + secret}},
		{"raw json echoing the key in \\u form", json.RawMessage(`{"command":"curl -H 'x-api-key: ` + u + `'"}`)},
		{"raw json, key split by escapes", json.RawMessage(`["` + jsonInner(secret, true) + `"]`)},
		{"raw json that is not json", json.RawMessage(`{"command": "` + secret)},
		{"bytes", []byte(secret)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			data := map[string]any{"x": tc.v}
			control, err := json.Marshal(newRedactor(nil).value(data))
			if err != nil {
				t.Fatal(err)
			}
			if len(leaks(control, secret)) == 0 {
				t.Fatalf("positive control: the check does not see the secret in %s", control)
			}
			out, err := json.Marshal(newRedactor([]string{secret}).value(data))
			if err != nil {
				t.Fatal(err)
			}
			if l := leaks(out, secret); len(l) > 0 {
				t.Errorf("left %v in %s", l, out)
			}
		})
	}
}

// BenchmarkRedact measures the byte scan over an agent log of the largest
// size the race keeps (8 MiB), holding backslashes and percent signs that
// make the matcher look, against the copy bytes.ReplaceAll makes of it.
func BenchmarkRedact(b *testing.B) {
	secrets := []string{testSecrets["specials"], testSecrets["unicode"], testSecrets["plain"], testSecrets["spaces"]}
	line := []byte(`{"command":"printf '%s\n' \"a\\b\" 50% done /usr/bin/x"} ok` + "\n")
	text := bytes.Repeat(line, (8<<20)/len(line))
	b.Run("redactor", func(b *testing.B) {
		rd := newRedactor(secrets)
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			rd.text(text)
		}
	})
	b.Run("bytes.ReplaceAll raw only", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			for _, s := range secrets {
				bytes.ReplaceAll(text, []byte(s), []byte(redactedMark))
			}
		}
	})
}
