//go:build linux || darwin

package sandbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// The status pipe: how an init (init_linux.go, seatbelt_init_darwin.go)
// tells its parent that the command started, or why not, and then that it
// ended with every other process of the sandbox gone.

// errNoStart: the init ended without a word — killed (by a timeout that
// fired during set-up, say) or not our init at all.
var errNoStart = fmt.Errorf("%w: the sandbox init exited before starting the command", ErrSetup)

// initStatus is the one record the init writes on its status pipe (see the
// protocol in init_linux.go): Started once the command is forked, Probe
// when probing, else the error that kept the command from starting.
type initStatus struct {
	Started bool         `json:"started,omitempty"`
	Exited  bool         `json:"exited,omitempty"` // the second record (init_linux.go)
	Error   string       `json:"error,omitempty"`
	Kind    string       `json:"kind,omitempty"` // setup, ns, stale, notfound, notexec
	Probe   *ProbeReport `json:"probe,omitempty"`
	// Warning, with Exited, is what the init could not do (macOS: end
	// every process of the sandbox by itself).
	Warning string `json:"warning,omitempty"`
}

func readStatus(r io.Reader) (*initStatus, error) {
	data, err := io.ReadAll(io.LimitReader(r, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("%w: read init status: %v", ErrSetup, err)
	}
	st := &initStatus{}
	if len(strings.TrimSpace(string(data))) == 0 {
		return nil, errNoStart
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(st); err != nil {
		return nil, fmt.Errorf("%w: init status: %v", ErrSetup, err)
	}
	if st.Exited || (!st.Started && st.Error == "" && st.Probe == nil) {
		return nil, fmt.Errorf("%w: the init's status says neither that the command started nor why not", ErrSetup)
	}
	if dec.More() {
		// Only a started command's end may follow, and nothing after it.
		var end initStatus
		if err := dec.Decode(&end); err != nil || !st.Started || !end.Exited ||
			end.Started || end.Error != "" || end.Probe != nil || dec.More() {
			return nil, fmt.Errorf("%w: init status: a record that is not the command's end after the first", ErrSetup)
		}
		st.Exited, st.Warning = true, end.Warning
	}
	return st, nil
}
