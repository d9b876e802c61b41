//go:build unix

package world

import (
	"io/fs"
	"os"
	"syscall"
)

// ownedInfo is a world file as the interpreter's stat sees it. Its test -O and -G read Sys() as
// a *syscall.Stat_t and panic on anything else (issue 21: `test -O x` ended world exec, the MCP
// server and a whole race). The world has one user, who owns every file: the ids are the
// process's own, which is what the interpreter compares them with.
type ownedInfo struct{ fs.FileInfo }

func (i ownedInfo) Sys() any {
	return &syscall.Stat_t{Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())}
}
