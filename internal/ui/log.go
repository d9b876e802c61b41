package ui

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
)

// The bounds of reading a record. events.jsonl is written by forkbomb, but
// what is in it came from models and forks, and a run folder may have been
// handed over by someone else: none of it decides how much we read.
const (
	MaxLine     = 1 << 20 // a longer line is shown as an oversize event
	MaxEvents   = 1 << 20 // lines indexed per run; later ones are not shown
	MaxString   = 4 << 10 // a string of an event as streamed; the rest on expand
	MaxPage     = 500     // events per page
	MaxFileRead = 8 << 20 // a patch or run.json
)

// eventLog indexes one events.jsonl by line: event n (from 1) is line n.
// The index grows as the file does; only complete lines (ending in \n)
// are indexed, so a line being written is never shown half.
type eventLog struct {
	path string
	mu   sync.Mutex
	offs []int64 // start of each indexed line; len(offs) lines known
	end  int64   // where the next line starts
}

// Len indexes what was appended since the last call and returns the
// number of complete lines.
func (l *eventLog) Len() (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.offs) >= MaxEvents {
		return len(l.offs), nil
	}
	f, err := openRegular(l.path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return 0, nil
		}
		return 0, err
	}
	defer f.Close()
	if _, err := f.Seek(l.end, io.SeekStart); err != nil {
		return 0, fmt.Errorf("events: %w", err)
	}
	br := bufio.NewReaderSize(f, 64<<10)
	pos, start := l.end, l.end
	for len(l.offs) < MaxEvents {
		chunk, err := br.ReadSlice('\n')
		pos += int64(len(chunk))
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			break // EOF: a partial line waits for its end
		}
		l.offs = append(l.offs, start)
		l.end, start = pos, pos
	}
	return len(l.offs), nil
}

// Get reads events from..to-1 (numbered from 1), each line bounded.
func (l *eventLog) Get(from, to int) ([]json.RawMessage, error) {
	l.mu.Lock()
	if to > len(l.offs)+1 {
		to = len(l.offs) + 1
	}
	if from < 1 {
		from = 1
	}
	var spans [][2]int64
	for n := from; n < to; n++ {
		next := l.end
		if n < len(l.offs) {
			next = l.offs[n]
		}
		spans = append(spans, [2]int64{l.offs[n-1], next})
	}
	l.mu.Unlock()
	if len(spans) == 0 {
		return nil, nil
	}
	f, err := openRegular(l.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := make([]json.RawMessage, 0, len(spans))
	for _, s := range spans {
		size := s[1] - s[0]
		if size > MaxLine {
			out = append(out, json.RawMessage(fmt.Sprintf(`{"type":"oversize","data":{"bytes":%d}}`, size)))
			continue
		}
		buf := make([]byte, size)
		if _, err := f.ReadAt(buf, s[0]); err != nil {
			return nil, fmt.Errorf("events: %w", err)
		}
		if !json.Valid(buf) {
			out = append(out, json.RawMessage(`{"type":"unreadable"}`))
			continue
		}
		out = append(out, buf)
	}
	return out, nil
}

// openRegular opens a file of the record without following a link at its
// name and refuses anything but a regular file (a FIFO would block us).
func openRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	return f, nil
}

// readBounded reads a whole small file of the record, refusing one
// larger than max.
func readBounded(path string, max int64) ([]byte, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, max)
	}
	return data, nil
}

// shown is an event as the page gets it: numbered, and each string cut to
// MaxString (the page fetches the whole event on expand).
type shown struct {
	ID        int            `json:"id"`
	Time      string         `json:"time,omitempty"`
	Type      string         `json:"type"`
	Fork      *int           `json:"fork,omitempty"`
	Data      map[string]any `json:"data,omitempty"`
	Truncated bool           `json:"truncated,omitempty"`
}

func show(id int, raw json.RawMessage, cut int) shown {
	var ev shown
	if err := json.Unmarshal(raw, &ev); err != nil || ev.Type == "" {
		return shown{ID: id, Type: "unreadable"}
	}
	ev.ID = id
	if cut > 0 {
		for k, v := range ev.Data {
			ev.Data[k] = truncate(v, cut, &ev.Truncated)
		}
	}
	return ev
}

func truncate(v any, cut int, did *bool) any {
	switch x := v.(type) {
	case string:
		if len(x) > cut {
			*did = true
			return x[:cut]
		}
	case map[string]any:
		for k, e := range x {
			x[k] = truncate(e, cut, did)
		}
	case []any:
		for i, e := range x {
			x[i] = truncate(e, cut, did)
		}
	}
	return v
}
