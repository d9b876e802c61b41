// Package sandbox runs one command so that the kernel, not the command's good
// will, decides what it can touch.
//
// A Policy says what the command may write (its workdir, extra --rw paths and
// a private temp dir), what it may additionally read, its network (a
// loopback of its own, plus at most one host socket reached through a
// forwarder, or the host's), the placeholder credentials it may hold, and
// its resource limits. Run turns the policy into kernel
// mechanisms on the best backend the machine offers:
//
//   - namespaces: an init — the slim forkbomb-init beside forkbomb when it
//     is a checked file of the same build (initbin_linux.go,
//     fingerprint.go), else the forkbomb binary re-executed — runs
//     inside new user, mount, pid, network, IPC, UTS and cgroup namespaces,
//     builds a read-only view of the host with credential folders hidden,
//     then applies Landlock and a seccomp filter to the thread that starts
//     the command, drops every capability and execs it. The init reaps; when
//     the command exits every descendant dies with the pid namespace.
//   - landlock: where user namespaces are unavailable, the same filesystem
//     rules are applied by Landlock alone, with seccomp, setsid, a child
//     subreaper and rlimits.
//   - seatbelt (macOS): a Seatbelt profile written from the policy
//     (seatbelt.go) is applied by sandbox-exec, which runs forkbomb itself
//     as the init inside it (sandbox_darwin.go, seatbelt_init_darwin.go).
//
// Which backend works is found by trial (see Probe); Run never falls back to
// running unconfined. Start keeps one such sandbox for many commands (a
// Session); a session's init, a one-command init and a probe's are started
// by the same code (start_linux.go). The parent/child protocol is documented
// in init_linux.go, a session's in session_init_linux.go.
package sandbox
