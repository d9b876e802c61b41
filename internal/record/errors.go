package record

import "errors"

var (
	// ErrShortSecret: a credential shorter than MinSecretLen cannot be
	// redacted from the record without shredding its text, so a run with
	// one is refused.
	ErrShortSecret = errors.New("a credential shorter than 8 bytes cannot be redacted from the record without shredding its text")
	// ErrRedaction: a file could not be redacted and stay well-formed; it
	// is not written.
	ErrRedaction = errors.New("redacting a secret would leave a malformed record file")
	// ErrFileName: a record file's name is not one plain file name.
	ErrFileName = errors.New("not a plain file name")
	// ErrKind: an event was decoded as a payload of another kind.
	ErrKind = errors.New("not a payload of the event's kind")
	// ErrNoRun: the runs directory holds no run of that id.
	ErrNoRun = errors.New("no such run")
)
