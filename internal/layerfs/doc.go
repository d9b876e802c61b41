// Package layerfs is how forkbomb's trusted side touches files a fork
// made. Everything under a fork's layers is hostile data: a name may hold
// any byte but NUL and '/', a "file" may be a symlink to a host secret, a
// FIFO that blocks an open forever, a device, or a sparse file of a
// terabyte. So every access here starts from a directory descriptor held
// by the caller and resolves names with openat2(RESOLVE_BENEATH |
// RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS) — on macOS, which has no
// openat2, one name at a time with O_NOFOLLOW (walk.go): no symlink is
// followed, whatever it points to, and nothing outside the directory is
// reachable, even if a component is swapped for a link between a check
// and a use.
// Files are opened non-blocking and checked to be regular before a byte is
// read; reads are bounded; walks are bounded in depth and entries.
//
// On top of that, Layers reads an overlayfs stack the way the kernel would
// (upper layer first, whiteouts in both forms, opaque directories), without
// mounting anything on the host. It is the one place that knows overlay
// layer semantics: the workspace's diff and the api engine's editor both
// read forks through it.
package layerfs
