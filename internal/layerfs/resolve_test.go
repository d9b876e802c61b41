//go:build linux || darwin

package layerfs

import "testing"

// resolution is one way a Dir resolves names; the trap tests attack each.
type resolution struct {
	name string
	open func(string) (*Dir, error)
}

// layers opens paths as a stack resolved by r.
func (r resolution) layers(t *testing.T, paths ...string) *Layers {
	t.Helper()
	l := &Layers{}
	for _, p := range paths {
		d, err := r.open(p)
		if err != nil {
			l.Close()
			t.Fatal(err)
		}
		l.dirs = append(l.dirs, d)
	}
	return l
}
