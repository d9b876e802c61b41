// Package modelproxy is forkbomb's host-side model proxy: the one way a
// fork's agent reaches a model API, and, with --network allow:HOST, the
// named hosts.
//
// Each fork gets an Endpoint: a UNIX socket in a 0700 folder of its own,
// which the sandbox bridges to 127.0.0.1:Port on the fork's own loopback
// (sandbox.Policy Network proxy). On that one listener the proxy serves
//
//   - origin-form model requests (POST /v1/messages, /v1/responses, …):
//     forwarded to the one upstream their path names, with the fork's
//     credential headers stripped and the real credential injected, so
//     the fork only ever holds a placeholder;
//   - CONNECT host:port: a tunnel to a host in Options.Allow, refused for
//     every other host;
//   - absolute-form plain-http proxying: only to an allowed host:port.
//
// Everything the fork sends is hostile: headers and bodies are bounded,
// requests per fork are rate-limited, redirects are never followed, and
// token usage is read from the upstream's response as it streams past,
// never from anything the fork says.
package modelproxy
