//go:build !race

package sandbox

// raceBuild: this binary has the race detector (initenv.go).
const raceBuild = false
