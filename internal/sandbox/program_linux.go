package sandbox

import "os"

// OpenProgram opens another program of forkbomb's (the world's slim worker) as the sandbox's
// standalone init is opened (initbin_linux.go): with O_PATH|O_NOFOLLOW|O_CLOEXEC — a symbolic
// link is refused, not followed — and checked through that descriptor: a regular executable
// file, neither set-id nor writable by group or others, owned by root or the caller, on a
// mount that allows execution. Execute it through /proc/self/fd/N, so that the file checked
// is the file run.
func OpenProgram(path string) (*os.File, error) { return openInit(path) }
