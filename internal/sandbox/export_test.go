//go:build linux || darwin

package sandbox

// WalkGitDirs is macOS's git scan, judged against Linux's (FindGitDirs)
// on the same trees.
var WalkGitDirs = walkGitDirs
