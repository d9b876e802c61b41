package world

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// benchScript is the ten-command script bench/world.sh runs in both shells.
const benchScript = `mkdir -p d; echo a > d/f; cat d/f; seq 10 | sort -r | head -3; x=1; echo $x; ls d; wc -l d/f; grep a d/f; echo done`

func megabyteWorld(b *testing.B) string {
	w := New()
	chunk := make([]byte, 16<<10)
	for i := range chunk {
		chunk[i] = byte('a' + i%26)
	}
	for i := range 64 {
		if err := w.FS.WriteFile("/work/f"+strconv.Itoa(i), chunk, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	file := filepath.Join(b.TempDir(), "w.world")
	if err := w.Save(file); err != nil {
		b.Fatal(err)
	}
	return file
}

// BenchmarkFork1MB: world.Fork of a world holding 1 MiB of files.
func BenchmarkFork1MB(b *testing.B) {
	file := megabyteWorld(b)
	dir := b.TempDir()
	b.ResetTimer()
	for i := range b.N {
		dst := filepath.Join(dir, strconv.Itoa(i))
		if err := Fork(file, dst); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		os.Remove(dst)
		b.StartTimer()
	}
}

// BenchmarkExecFile: lock, read, run the ten-command script in the session's confined worker
// (started once, as an MCP server, a race's branch or a drive starts it), decode, save, on a
// small world.
func BenchmarkExecFile(b *testing.B) {
	file := filepath.Join(b.TempDir(), "w.world")
	if err := New().Save(file); err != nil {
		b.Fatal(err)
	}
	r := NewRunner()
	defer r.Close()
	for range b.N {
		if res, err := r.ExecFile(context.Background(), file, benchScript, nil, Limits{}); err != nil || res.Status != 0 {
			b.Fatal(err, res.Status, string(res.Stderr))
		}
	}
}

// BenchmarkExecFileOneShot: the same with a worker started for each exec (world.ExecFile, as
// the race's check does).
func BenchmarkExecFileOneShot(b *testing.B) {
	file := filepath.Join(b.TempDir(), "w.world")
	if err := New().Save(file); err != nil {
		b.Fatal(err)
	}
	for range b.N {
		if res, err := ExecFile(context.Background(), file, benchScript, nil, Limits{}); err != nil || res.Status != 0 {
			b.Fatal(err, res.Status, string(res.Stderr))
		}
	}
}

// BenchmarkExecInProcess: the interpreter alone, in this process, on a loaded world (the
// layer the worker adds nothing to).
func BenchmarkExecInProcess(b *testing.B) {
	for range b.N {
		if res, err := New().Exec(context.Background(), benchScript, nil, Limits{}); err != nil || res.Status != 0 {
			b.Fatal(err, res.Status, string(res.Stderr))
		}
	}
}

// sourceWorld is a world of 64 files of 16 KiB of source text (lines, tabs, quotes: what JSON
// escapes) and one of 64 KiB that is not UTF-8, as an agent's workspace holds.
func sourceWorld(b *testing.B) []byte {
	w := New()
	line := "\tif err := f(\"x\", 'y'); err != nil {\n\t\treturn fmt.Errorf(\"%w\", err)\n\t}\n"
	chunk := make([]byte, 0, 16<<10)
	for len(chunk)+len(line) <= cap(chunk) {
		chunk = append(chunk, line...)
	}
	if err := w.FS.MkdirAll("/work/src", 0o755); err != nil {
		b.Fatal(err)
	}
	for i := range 64 {
		if err := w.FS.WriteFile("/work/src/f"+strconv.Itoa(i)+".go", chunk, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	bin := make([]byte, 64<<10)
	for i := range bin {
		bin[i] = byte(i * 131)
	}
	if err := w.FS.WriteFile("/work/blob.bin", bin, 0o644); err != nil {
		b.Fatal(err)
	}
	enc, err := w.Encode()
	if err != nil {
		b.Fatal(err)
	}
	return enc
}

// BenchmarkDecode1MB and BenchmarkEncode1MB: the world file's codec. An exec decodes twice (the
// worker the request, the trusted side the answer) and encodes once (the worker its answer,
// which the trusted side saves as it came).
func BenchmarkDecode1MB(b *testing.B) {
	enc := sourceWorld(b)
	b.SetBytes(int64(len(enc)))
	for b.Loop() {
		if _, err := Decode(enc, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncode1MB(b *testing.B) {
	w, err := Decode(sourceWorld(b), 0)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(sourceWorld(b))))
	for b.Loop() {
		if _, err := w.Encode(); err != nil {
			b.Fatal(err)
		}
	}
}
