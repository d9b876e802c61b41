package worldrace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/workspace"
	"github.com/forkbomb/forkbomb/internal/world"
)

// Confined is a world as an agent CLI sees it (world drive, world race --engine claude-code):
// the CLI runs in forkbomb's sandbox and its only tool is the world's MCP server, forkbomb
// itself re-executed as `world mcp` inside the same sandbox. That server works on a COPY of the
// world in a private folder (the sandbox's workdir, its only writable tree); the world's own
// folder is hidden from the sandbox, so nothing in it can touch the user's file. When the CLI
// has stopped, the copy — decoded as hostile input, through no link — replaces the world
// atomically, all under the world's lock, so a drive is one long exec to anyone else.
type Confined struct {
	File   string
	Limits world.Limits

	self string // forkbomb, re-executed as the MCP server
	bin  string // a read-only folder holding "forkbomb", a link to self
	dir  string // the private folder: the sandbox's workdir
}

// copyName is the world's copy in the private folder.
const copyName = "world.world"

// maxWorldFile bounds the read of the copy the agent's sandbox leaves (the decoder's own cap).
const maxWorldFile = 1 << 30

// NewConfined prepares the folders; Close removes them. self is the forkbomb binary ("":
// os.Executable).
func NewConfined(file string, l world.Limits, self string) (*Confined, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, fmt.Errorf("world drive: %w", err)
	}
	if self == "" {
		if self, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("world drive: forkbomb's own binary: %w", err)
		}
	}
	if self, err = filepath.EvalSymlinks(self); err != nil {
		return nil, fmt.Errorf("world drive: forkbomb's own binary: %w", err)
	}
	c := &Confined{File: abs, Limits: l, self: self}
	if c.bin, err = os.MkdirTemp("", "forkbomb-drive-bin-"); err != nil {
		return nil, fmt.Errorf("world drive: %w", err)
	}
	// Named forkbomb whatever self is called (a test binary dispatches on that name).
	if err := os.Symlink(self, filepath.Join(c.bin, "forkbomb")); err != nil {
		c.Close()
		return nil, fmt.Errorf("world drive: %w", err)
	}
	if c.dir, err = os.MkdirTemp("", "forkbomb-drive-"); err != nil {
		c.Close()
		return nil, fmt.Errorf("world drive: %w", err)
	}
	return c, nil
}

// Close removes the private folders.
func (c *Confined) Close() {
	if c.dir != "" {
		sandbox.RemoveAll(c.dir)
	}
	if c.bin != "" {
		os.RemoveAll(c.bin)
	}
}

// MCPServer implements engine.ToolServer: `forkbomb world mcp COPY` with the world's limits.
func (c *Confined) MCPServer() (string, []string, []string) {
	l := c.Limits
	return "world", []string{filepath.Join(c.bin, "forkbomb"), "world", "mcp", filepath.Join(c.dir, copyName),
		fmt.Sprintf("--max-commands=%d", l.MaxCommands), fmt.Sprintf("--timeout=%s", l.WallTime),
		fmt.Sprintf("--max-output=%d", l.MaxOutput), fmt.Sprintf("--max-size=%d", l.MaxSize)}, []string{"shell"}
}

// Files implements engine.Workspace: none; the shell is the only tool.
func (c *Confined) Files(context.Context) (string, workspace.Files, error) {
	return "/work", noFiles{}, nil
}

// Exec implements engine.Workspace: the agent's one command (its CLI) in a sandbox whose
// workdir is the private folder holding a fresh copy of the world.
func (c *Confined) Exec(ctx context.Context, p sandbox.Policy, stdio sandbox.Stdio) (*sandbox.Result, error) {
	unlock, err := world.Lock(ctx, c.File)
	if err != nil {
		return nil, err
	}
	defer unlock()
	cp := filepath.Join(c.dir, copyName)
	os.Remove(cp) // a copy an earlier Exec left
	if err := copyFile(c.File, cp); err != nil {
		return nil, err
	}
	p.Workdir = c.dir
	p.ReadOnly = append(p.ReadOnly, c.bin, c.self)
	// The world's folder (its trunk, its sibling branches) is not the agent's to see.
	// (A system folder cannot be hidden; the sandbox shows it read-only.)
	if sandbox.CheckHide(filepath.Dir(c.File)) == nil {
		p.Hide = append(p.Hide, filepath.Dir(c.File))
	}
	res, err := sandbox.Run(ctx, p, stdio)
	if err != nil {
		return res, err
	}
	w, err := loadCopy(c.dir, c.Limits.MaxSize)
	if err != nil {
		return res, fmt.Errorf("world drive: the world the agent left: %w", err)
	}
	if err := w.Save(c.File); err != nil {
		return res, err
	}
	return res, nil
}

// copyFile copies a world byte for byte (never a hard link: the sandbox could write through one).
func copyFile(src, dst string) error {
	in, err := os.OpenFile(src, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return fmt.Errorf("world drive: %w", err)
	}
	defer in.Close()
	if fi, err := in.Stat(); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("world drive: %s is not a regular file", src)
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("world drive: %w", err)
	}
	if _, err := io.Copy(out, io.LimitReader(in, maxWorldFile+1)); err != nil {
		out.Close()
		return fmt.Errorf("world drive: %w", err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("world drive: %w", err)
	}
	return nil
}

// loadCopy reads what the sandbox left as hostile input: through no link (os.Root, and
// O_NOFOLLOW on the last name), only a regular file, bounded, then the full decoder.
func loadCopy(dir string, maxSize int64) (*world.World, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.OpenFile(copyName, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	b, err := io.ReadAll(io.LimitReader(f, maxWorldFile+1))
	if err != nil {
		return nil, err
	}
	return world.Decode(b, maxSize)
}

var _ engine.ToolServer = (*Confined)(nil)
