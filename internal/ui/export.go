package ui

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/forkbomb/forkbomb/internal/home"
)

// MaxExport bounds the event data bundled in an export; past it, strings
// are cut as in a live stream (the page says which events are cut).
const MaxExport = 64 << 20

// bundle is data.js of an export: the run, its events (numbered as the
// server numbers them) and its patches.
type bundle struct {
	Run     any               `json:"run"`
	Events  []shown           `json:"events"`
	Patches map[string]string `json:"patches"`
}

// Export writes a static replay of run id to dir: index.html, the page's
// script and style, and data.js, the record as a script the page loads
// with <script src> — a page opened from file:// may not fetch() its
// neighbours. dir is created, or must be empty; files are 0644.
func Export(runsDir, id, dir string) error {
	runDir, err := home.Join(runsDir, "run", id)
	if err != nil {
		return err
	}
	run, err := loadRun(runsDir, id)
	if err != nil {
		return err
	}
	l := &eventLog{path: filepath.Join(runDir, "events.jsonl")}
	n, err := l.Len()
	if err != nil {
		return fmt.Errorf("export %s: %w", id, err)
	}
	b := bundle{Run: run, Events: make([]shown, 0, n), Patches: map[string]string{}}
	budget := MaxExport
	for from := 1; from <= n; from += MaxPage {
		raws, err := l.Get(from, min(n+1, from+MaxPage))
		if err != nil {
			return fmt.Errorf("export %s: %w", id, err)
		}
		for i, raw := range raws {
			cut := 0
			if budget -= len(raw); budget < 0 {
				cut = MaxString
			}
			b.Events = append(b.Events, show(from+i, raw, cut))
		}
	}
	for i := 0; i < run.Forks && i < 1024; i++ {
		if p, ok := patchPath(runDir, strconv.Itoa(i)); ok {
			if data, err := readBounded(p, MaxFileRead); err == nil {
				b.Patches[strconv.Itoa(i)] = string(data)
			}
		}
	}
	if data, err := readBounded(filepath.Join(runDir, "winner.patch"), MaxFileRead); err == nil {
		b.Patches["winner"] = string(data)
	}
	// json.Marshal escapes <, > and & (and U+2028/9): the bundle cannot
	// close a script element or break out of its one assignment.
	js, err := json.Marshal(b)
	if err != nil {
		return fmt.Errorf("export %s: %w", id, err)
	}
	files := map[string][]byte{"data.js": append(append([]byte("window.FORKBOMB_EXPORT = "), js...), ";\n"...)}
	for _, name := range []string{"index.html", "app.js", "app.css"} {
		data, err := assets.ReadFile("assets/" + name)
		if err != nil {
			return err
		}
		files[name] = data
	}
	if err := emptyDir(dir); err != nil {
		return err
	}
	for name, data := range files {
		if err := writeNew(filepath.Join(dir, name), data); err != nil {
			return fmt.Errorf("export %s: %w", id, err)
		}
	}
	return nil
}

// emptyDir makes dir, or accepts it if it exists and is empty.
func emptyDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if len(entries) > 0 {
		return fmt.Errorf("export to %s: %w", dir, ErrExportDir)
	}
	return nil
}

// writeNew creates path exclusively: nothing planted at the name since
// the folder was found empty is followed or overwritten.
func writeNew(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	return errors.Join(err, f.Close())
}
