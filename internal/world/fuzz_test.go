package world

import (
	"bytes"
	"encoding/json"
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
