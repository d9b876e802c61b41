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

// BenchmarkExecFile: lock, load, run the ten-command script, save, on a small world.
func BenchmarkExecFile(b *testing.B) {
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
