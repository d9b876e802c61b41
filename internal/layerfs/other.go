//go:build !linux && !darwin

package layerfs

import (
	"os"

	"golang.org/x/sys/unix"
)

// Dir is unavailable off Linux and macOS: every operation returns ErrUnsupported,
// never an unchecked read.
type Dir struct{}

func Open(string) (*Dir, error)                                    { return nil, ErrUnsupported }
func (d *Dir) Close() error                                        { return nil }
func (d *Dir) Name() string                                        { return "" }
func (d *Dir) OpenDir(string) (*Dir, error)                        { return nil, ErrUnsupported }
func (d *Dir) Lstat(string) (*unix.Stat_t, error)                  { return nil, ErrUnsupported }
func (d *Dir) ReadFile(string, int64) ([]byte, os.FileMode, error) { return nil, 0, ErrUnsupported }
func (d *Dir) Readlink(string) (string, error)                     { return "", ErrUnsupported }
func (d *Dir) OpenFile(string) (*os.File, *unix.Stat_t, error)     { return nil, nil, ErrUnsupported }
func (d *Dir) Walk(WalkLimits, func(WalkEntry) error) error        { return ErrUnsupported }

// Layers is unavailable off Linux and macOS.
type Layers struct{}

func OpenLayers([]string) (*Layers, error)                            { return nil, ErrUnsupported }
func (l *Layers) Close()                                              {}
func (l *Layers) Lookup(string) (int, *unix.Stat_t, error)            { return 0, nil, ErrUnsupported }
func (l *Layers) ReadFile(string, int64) ([]byte, os.FileMode, error) { return nil, 0, ErrUnsupported }
func (l *Layers) List(string, int) ([]string, error)                  { return nil, ErrUnsupported }
func (l *Layers) WriteFile(string, []byte, os.FileMode) error         { return ErrUnsupported }
