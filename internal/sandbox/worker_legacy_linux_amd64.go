package sandbox

import "golang.org/x/sys/unix"

// workerLegacyDenied are x86_64's path calls that newer architectures only have in their *at
// form, and its process-making calls besides clone.
var workerLegacyDenied = []uint32{
	unix.SYS_OPEN, unix.SYS_CREAT, unix.SYS_STAT, unix.SYS_LSTAT, unix.SYS_ACCESS, unix.SYS_READLINK,
	unix.SYS_MKDIR, unix.SYS_RMDIR, unix.SYS_UNLINK, unix.SYS_RENAME, unix.SYS_LINK, unix.SYS_SYMLINK,
	unix.SYS_CHMOD, unix.SYS_CHOWN, unix.SYS_LCHOWN, unix.SYS_MKNOD, unix.SYS_UTIME, unix.SYS_UTIMES,
	unix.SYS_FUTIMESAT, unix.SYS_FORK, unix.SYS_VFORK, unix.SYS_GETDENTS, unix.SYS_INOTIFY_INIT,
}
