package sandbox

import (
	"fmt"
	"io"
	"strings"
)

// Layer is one confinement mechanism and whether it works on this machine.
type Layer struct {
	Name   string `json:"name"`
	Status string `json:"status"` // "ok", "partial" or "unavailable"
	Detail string `json:"detail,omitempty"`
	// Tier is how strongly it holds where the probe says so (macOS):
	// kernel, forkbomb, requested or none, as in docs/SECURITY.md.
	Tier string `json:"tier,omitempty"`
}

// ProbeReport says which layers engage on this machine, found by trial: the
// probe builds real sandboxes (one per backend) and inspects them from
// inside.
type ProbeReport struct {
	// Mode is the backend `forkbomb sandbox` uses here: namespaces,
	// landlock, or none (it refuses to run without --no-sandbox).
	Mode   Mode    `json:"mode"`
	Kernel string  `json:"kernel"`
	UID    int     `json:"uid"`
	Layers []Layer `json:"layers"`
	// Init is the program that serves as the sandbox's init here.
	Init *InitReport `json:"init,omitempty"`
	// Notice is what a person must know of this backend first (Notice).
	Notice string `json:"notice,omitempty"`
}

// ProbeOptions change what Probe probes.
type ProbeOptions struct {
	// Init is Policy.Init for the probe's sandboxes.
	Init string
}

// InitReport says which init confined starts use, and why.
type InitReport struct {
	// Path is the standalone forkbomb-init used, or /proc/self/exe when
	// forkbomb serves as its own init.
	Path       string `json:"path"`
	Standalone bool   `json:"standalone"`
	Reason     string `json:"reason"`
}

func (r *ProbeReport) add(name string, ok bool, detail string) {
	st := "ok"
	if !ok {
		st = "unavailable"
	}
	r.Layers = append(r.Layers, Layer{Name: name, Status: st, Detail: detail})
}

// Layer returns the named layer, or nil.
func (r *ProbeReport) Layer(name string) *Layer {
	for i := range r.Layers {
		if r.Layers[i].Name == name {
			return &r.Layers[i]
		}
	}
	return nil
}

// WriteText prints the report for a person.
func (r *ProbeReport) WriteText(w io.Writer) {
	fmt.Fprintf(w, "forkbomb sandbox probe — kernel %s, uid %d\n", r.Kernel, r.UID)
	fmt.Fprintf(w, "backend: %s\n", r.Mode)
	if r.Init != nil {
		fmt.Fprintf(w, "init: %s (%s)\n", r.Init.Path, r.Init.Reason)
	}
	if r.Notice != "" {
		fmt.Fprintf(w, "note: %s\n", r.Notice)
	}
	fmt.Fprintln(w)
	width := 0
	for _, l := range r.Layers {
		width = max(width, len(l.Name))
	}
	for _, l := range r.Layers {
		mark := "✓"
		switch l.Status {
		case "unavailable":
			mark = "✗"
		case "partial":
			mark = "~"
		}
		detail := strings.TrimSpace(l.Detail)
		if l.Tier != "" {
			detail = "[" + l.Tier + "] " + detail
		}
		fmt.Fprintf(w, "  %s %-*s  %s\n", mark, width, l.Name, detail)
	}
}
