package lab

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
)

// Tail keeps the last Max bytes written to it (64 KiB when Max is 0):
// what a confined test printed, enough to say why it failed, never a
// fork's whole output in memory.
type Tail struct {
	Max int
	b   []byte
}

func (t *Tail) Write(p []byte) (int, error) {
	max := t.Max
	if max <= 0 {
		max = 64 << 10
	}
	t.b = append(t.b, p...)
	if len(t.b) > max {
		t.b = append([]byte(nil), t.b[len(t.b)-max:]...)
	}
	return len(p), nil
}

func (t *Tail) String() string { return string(t.b) }

// Last is the last n lines of what was kept.
func (t *Tail) Last(n int) string { return LastLines(t.String(), n) }

// LastLines is the last n lines of s, trimmed, as valid UTF-8.
func LastLines(s string, n int) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.ToValidUTF8(strings.Join(ls, "\n"), "?")
}

// NewID is 8 random hex characters: a fresh name for the workspaces a
// lab verb makes.
func NewID() string {
	b := make([]byte, 4)
	rand.Read(b) // never fails on Linux
	return hex.EncodeToString(b)
}
