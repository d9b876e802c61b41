package ui

import "errors"

var (
	// ErrNotLoopback: the server was asked to listen elsewhere than on a
	// loopback IPv4 address.
	ErrNotLoopback = errors.New("the ui listens on 127.0.0.1 only")
	// ErrExportDir: the export's folder exists and is not empty.
	ErrExportDir = errors.New("export folder is not empty")
)
