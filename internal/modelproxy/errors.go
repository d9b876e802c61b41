package modelproxy

import "errors"

var (
	// ErrUpstream means an Upstream cannot be used: an unknown kind, two
	// of one kind, a URL with credentials, or plain http to a host that
	// is not loopback.
	ErrUpstream = errors.New("model proxy upstream refused")
	// ErrAllow means a host given for Options.Allow (--network allow:) is
	// not a host name or IP address with an optional port.
	ErrAllow = errors.New("allowed host refused")
	// ErrClosed means the proxy was closed.
	ErrClosed = errors.New("model proxy closed")
)
