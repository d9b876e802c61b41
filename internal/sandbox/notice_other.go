//go:build !darwin

package sandbox

// Notice: nothing to say first here (see sandbox_darwin.go).
const Notice = ""
