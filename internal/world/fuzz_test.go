package world

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// FuzzDecode: no input makes the decoder panic or loop; what it accepts encodes to a file it
// accepts again, unchanged.
func FuzzDecode(f *testing.F) {
	w := New()
	w.FS.MkdirAll("/work/a/b", 0o755)
	w.FS.WriteFile("/work/a/f", []byte("x\xff"), 0o644)
	w.FS.Link("/work/a/f", "/work/a/g")
	w.FS.Symlink("../f", "/work/a/b/l")
	good, _ := w.Encode()
	f.Add(good)
	f.Add([]byte(`{"format":"forkbomb-world","version":1,"cwd":"/work","inodes":[{"type":"dir","mode":493}],"entries":[{"path":"","inode":0}]}`))
	f.Add([]byte(`{"format":"forkbomb-world","version":1,"cwd":"/work","inodes":[{"type":"dir"},{"type":"dir"}],"entries":[{"path":"","inode":0},{"path":"x","inode":1},{"path":"x/y","inode":1}]}`))
	f.Add([]byte(`{"format":"forkbomb-world","version":1,"cwd":"/","inodes":[{"type":"dir"}],"entries":[{"path":"","inode":0},{"path":"../x","inode":0}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		w, err := Decode(b, 1<<20)
		if err != nil {
			return
		}
		enc, err := w.Encode()
		if err != nil {
			t.Fatalf("encode of a decoded world: %v", err)
		}
		w2, err := Decode(enc, 1<<20)
		if err != nil {
			t.Fatalf("re-decode: %v\n%s", err, enc)
		}
		enc2, _ := w2.Encode()
		if !bytes.Equal(enc, enc2) {
			t.Fatalf("encode not stable")
		}
	})
}

// TestDecodeRefuses names the hostile shapes the decoder must refuse.
func TestDecodeRefuses(t *testing.T) {
	t.Parallel()
	head := `{"format":"forkbomb-world","version":1,"cwd":"/work",`
	for name, body := range map[string]string{
		"dotdot":        `"inodes":[{"type":"dir"},{"type":"file"}],"entries":[{"path":"","inode":0},{"path":"../x","inode":1}]}`,
		"dir twice":     `"inodes":[{"type":"dir"},{"type":"dir"}],"entries":[{"path":"","inode":0},{"path":"a","inode":1},{"path":"b","inode":1}]}`,
		"dir in itself": `"inodes":[{"type":"dir"}],"entries":[{"path":"","inode":0},{"path":"a","inode":0}]}`,
		"orphan inode":  `"inodes":[{"type":"dir"},{"type":"file"}],"entries":[{"path":"","inode":0}]}`,
		"child first":   `"inodes":[{"type":"dir"},{"type":"file"}],"entries":[{"path":"","inode":0},{"path":"a/b","inode":1}]}`,
		"bad mode":      `"inodes":[{"type":"dir","mode":65535}],"entries":[{"path":"","inode":0}]}`,
		"unknown field": `"inodes":[{"type":"dir"}],"entries":[{"path":"","inode":0}],"x":1}`,
		"no version":    `"inodes":[],"entries":[]}`,
		"bad option":    `"options":["rm -rf /"],"inodes":[{"type":"dir"}],"entries":[{"path":"","inode":0}]}`,
		"slash in name": `"inodes":[{"type":"dir"},{"type":"file"}],"entries":[{"path":"","inode":0},{"path":"a//b","inode":1}]}`,
	} {
		if _, err := Decode([]byte(head+body), 0); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := Decode([]byte(head+`"inodes":[{"type":"dir"}],"entries":[{"path":"","inode":0}]}`), 0); err != nil {
		t.Errorf("control: %v", err)
	}
}

// FuzzWireBytes: the files' bytes, written through an interface (wireBytes), are written as
// Bytes writes them, byte for byte, and read back (fromWire) as they were.
func FuzzWireBytes(f *testing.F) {
	for _, s := range []string{"", "a", "line\n\ttab \"q\" \\ <a&b>", "\u2028\u2029\x00\x1f\x7f", "\xff\xfe not utf-8", "é"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want, err := json.Marshal(Bytes(b))
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(wireBytes(b, false))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%q written as %s, Bytes writes %s", b, got, want)
		}
		if len(b) == 0 && wireBytes(b, true) != nil {
			t.Fatal("an empty byte string is not left out")
		}
		if len(b) > 0 {
			if kept, _ := json.Marshal(wireBytes(b, true)); !bytes.Equal(kept, got) {
				t.Fatalf("%q written as %s where it may be left out, %s where not", b, kept, got)
			}
		}
		var v any
		if err := json.Unmarshal(got, &v); err != nil {
			t.Fatal(err)
		}
		back, err := fromWire(v)
		if err != nil || !bytes.Equal(back, b) {
			t.Fatalf("%q read back as %q, %v", b, back, err)
		}
	})
}

// referenceParse reads a world file with encoding/json, as Decode did before parseWorld: the
// reference FuzzParseWorld holds parseWorld to.
func referenceParse(b []byte) (fileJSON, error) {
	var fj fileJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&fj); err != nil {
		return fileJSON{}, err
	}
	if dec.More() {
		return fileJSON{}, errors.New("trailing data")
	}
	return fj, nil
}

// FuzzParseWorld: parseWorld never panics, reads every file Encode writes, accepts nothing
// encoding/json refuses, and where both accept a file they make the same world of it (or both
// refuse what it holds).
func FuzzParseWorld(f *testing.F) {
	w := New()
	w.FS.MkdirAll("/work/a/b", 0o755)
	w.FS.WriteFile("/work/a/f", []byte("x\xff"), 0o644)
	w.FS.WriteFile("/work/a/t", []byte("line\n\t\"q\" \\ <&> \u2028 é 😀 \x01\x7f"), 0o755)
	w.FS.Link("/work/a/f", "/work/a/g")
	w.FS.Symlink("../f", "/work/a/b/l")
	w.State.Functions = []Named{{Name: "f", Source: "f() { echo \"$1\"; }"}}
	w.State.Aliases = []Named{{Name: "ll", Source: "alias ll='ls -l'"}}
	w.State.Options = []string{"shopt -o -s errexit"}
	good, _ := w.Encode()
	f.Add(good)
	for _, s := range []string{
		`{"format":"forkbomb-world","version":1,"cwd":"/work","vars":[{"name":"a","kind":"indexed","list":["x","y"],"indexes":[1,3]},{"name":"m","kind":"assoc","map":[["k",{"b64":"/w=="}]]}],"inodes":[{"type":"dir","mode":493}],"entries":[{"path":"","inode":0}]}`,
		` { "format" : "forkbomb-world" , "version" : 1 , "cwd" : "\/w\u006frk" , "turns" : null , "vars" : null , "options" : [] , "inodes" : [ { "type" : "dir" , "mode" : null } ] , "entries" : [ { "path" : "" , "inode" : 0 } ] } `,
		`{"format":"forkbomb-world","version":1,"cwd":"/work","inodes":[{"type":"dir"},{"type":"file","data":"\ud83d\ude00","mtime":-5}],"entries":[{"path":"","inode":0},{"path":"\u00e9","inode":1}]}`,
		`{"format":"forkbomb-world","version":1.0,"cwd":"/work","inodes":[{"type":"dir"}],"entries":[{"path":"","inode":0}]}`,
		`{"FORMAT":"forkbomb-world","version":1,"cwd":"/work","inodes":[{"type":"dir"}],"entries":[{"path":"","inode":0}]}`,
		`{"format":"forkbomb-world","version":1,"cwd":"/work","inodes":[{"type":"dir"},{"type":"file","data":"\ud800"}],"entries":[{"path":"","inode":0},{"path":"x","inode":1}]}`,
		`{"format":"forkbomb-world","version":1,"cwd":null,"inodes":[{"type":"dir"}],"entries":[{"path":"","inode":0}]}`,
		`{"format":"forkbomb-world","version":1,"cwd":"/work","vars":[{"name":"m","kind":"assoc","map":[["k"],["a","b","c"]]}],"inodes":[{"type":"dir"}],"entries":[{"path":"","inode":0}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := parseWorld(b)
		ref, rerr := referenceParse(b)
		if err != nil {
			// Stricter than encoding/json is allowed, but never about what Encode writes.
			if rerr == nil {
				if rw, werr := ref.world(0); werr == nil {
					re, _ := rw.Encode()
					if _, err := parseWorld(re); err != nil {
						t.Fatalf("parseWorld refuses what Encode wrote: %v\n%s", err, re)
					}
				}
			}
			return
		}
		if rerr != nil {
			t.Fatalf("parseWorld accepts what encoding/json refuses (%v):\n%q", rerr, b)
		}
		gw, gerr := got.world(0)
		rw, rwerr := ref.world(0)
		if (gerr == nil) != (rwerr == nil) {
			t.Fatalf("parseWorld's file: %v; encoding/json's: %v\n%q", gerr, rwerr, b)
		}
		if gerr != nil {
			return
		}
		ge, _ := gw.Encode()
		re, _ := rw.Encode()
		if !bytes.Equal(ge, re) {
			t.Fatalf("two worlds of one file:\n%s\n%s", ge, re)
		}
		if _, err := parseWorld(ge); err != nil {
			t.Fatalf("parseWorld refuses what Encode wrote: %v\n%s", err, ge)
		}
	})
}

// TestParseWorldStrict: parseWorld reads JSON's white space, escapes, surrogate pairs, nulls
// and empty arrays as encoding/json does, and refuses what it is stricter about.
func TestParseWorldStrict(t *testing.T) {
	t.Parallel()
	head := `{"format":"forkbomb-world","version":1,`
	tail := `"inodes":[{"type":"dir"}],"entries":[{"path":"","inode":0}]}`
	ok := map[string]string{
		"white space and escapes": ` { "format" : "forkbomb-world" , "version" : 1 , "cwd" : "\/w\u006frk" , "turns" : null , "vars" : null , "options" : [ ] , "inodes" : [ { "type" : "dir" , "mode" : null } ] , "entries" : [ { "path" : "" , "inode" : 0 } ] } `,
		"surrogate pair":          head + `"cwd":"/work/\ud83d\ude00",` + tail,
		"b64 cwd":                 head + `"cwd":{"b64":"L3dvcms="},` + tail,
		"a variable of 2^20+1":    head + `"cwd":"/work","vars":[{"name":"a","kind":"indexed","list":[` + strings.Repeat(`"x",`, maxEntries) + `"y"]}],` + tail,
	}
	for name, s := range ok {
		fj, err := parseWorld([]byte(s))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if _, err := fj.world(0); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if fj, _ := parseWorld([]byte(ok["surrogate pair"])); string(fj.Cwd) != "/work/😀" {
		t.Errorf("surrogate pair read as %q", fj.Cwd)
	}
	for name, s := range map[string]string{
		"key in another case":  `{"FORMAT":"forkbomb-world","version":1,"cwd":"/work",` + tail,
		"fraction":             `{"format":"forkbomb-world","version":1.0,"cwd":"/work",` + tail,
		"exponent":             `{"format":"forkbomb-world","version":1e0,"cwd":"/work",` + tail,
		"leading zero":         `{"format":"forkbomb-world","version":01,"cwd":"/work",` + tail,
		"lone surrogate":       head + `"cwd":"/work/\ud800",` + tail,
		"lone low surrogate":   head + `"cwd":"/work/\udc00",` + tail,
		"unpaired surrogate":   head + `"cwd":"/work/\ud800\u0041",` + tail,
		"not utf-8":            head + "\"cwd\":\"/work/\xff\"," + tail,
		"control character":    head + "\"cwd\":\"/work/\x01\"," + tail,
		"null byte string":     head + `"cwd":null,` + tail,
		"null data":            head + `"cwd":"/work","inodes":[{"type":"dir","data":null}],"entries":[{"path":"","inode":0}]}`,
		"null path":            head + `"cwd":"/work","inodes":[{"type":"dir"}],"entries":[{"path":null,"inode":0}]}`,
		"map entry of one":     head + `"cwd":"/work","vars":[{"name":"m","kind":"assoc","map":[["k"]]}],` + tail,
		"map entry of three":   head + `"cwd":"/work","vars":[{"name":"m","kind":"assoc","map":[["a","b","c"]]}],` + tail,
		"b64 with another key": head + `"cwd":{"b64":"L3dvcms=","x":1},` + tail,
		"mode out of range":    head + `"cwd":"/work","inodes":[{"type":"dir","mode":-1}],"entries":[{"path":"","inode":0}]}`,
		"trailing data":        head + `"cwd":"/work",` + tail + `{}`,
		"cut short":            head + `"cwd":"/wo`,
		"bad escape":           head + `"cwd":"/work\x",` + tail,
		"bare word":            head + `"cwd":"/work","turns":nul,` + tail,
		"short literal":        head + `"cwd":"/work","vars":[{"name":"a","kind":"string","exported":tru}],` + tail,
		"a lone minus":         head + `"cwd":"/work","turns":-,` + tail,
		"integer overflow":     head + `"cwd":"/work","turns":99999999999999999999,` + tail,
		"surrogate at the end": head + `"cwd":"/work/\ud83d`,
		"short \\u":            head + `"cwd":"/work/\u12",` + tail,
		"empty b64 object":     head + `"cwd":{},` + tail,
		"null b64":             head + `"cwd":{"b64":null},` + tail,
		"b64 twice":            head + `"cwd":{"b64":"L3dvcms=","b64":"L3dvcms="},` + tail,
		"key twice":            head + `"cwd":"/x","cwd":"/work",` + tail,
		"key twice, nested":    head + `"cwd":"/work","inodes":[{"type":"dir","mode":493,"mode":0}],"entries":[{"path":"","inode":0}]}`,
		"too many variables":   head + `"cwd":"/work","vars":[` + strings.Repeat(`{},`, maxVars) + `{}],` + tail,
	} {
		if _, err := parseWorld([]byte(s)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestDecodeQuotesShort: a value Decode quotes in its error — an unknown key, a format name, a
// path — is cut at 64 bytes, so a file cannot fill a terminal or a log through its errors.
func TestDecodeQuotesShort(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 10000)
	tail := `"inodes":[{"type":"dir"}],"entries":[{"path":"","inode":0}]}`
	for name, s := range map[string]string{
		"unknown key": `{"format":"forkbomb-world","version":1,"cwd":"/work","` + long + `":1,` + tail,
		"format":      `{"format":"` + long + `","version":1,"cwd":"/work",` + tail,
		"cwd":         `{"format":"forkbomb-world","version":1,"cwd":"` + long + `",` + tail,
	} {
		_, err := Decode([]byte(s), 0)
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if len(err.Error()) > 200 || !strings.Contains(err.Error(), strings.Repeat("x", 64)+"…") {
			t.Errorf("%s: error of %d bytes, want the value cut at 64: %.120s", name, len(err.Error()), err)
		}
	}
}
