package sandbox

// The parent/child protocol.
//
// The parent (startInit in start_linux.go) starts an init — the
// standalone forkbomb-init (cmd/forkbomb-init) when one of the same build
// is beside it, else /proc/self/exe again; see initbin_linux.go — as
// "forkbomb-init" with argv[1] == initArg, in a new session, with the
// command's environment (the allowlist, nothing else), cwd "/" and two
// extra descriptors; in namespace mode also in new user, mount, pid, IPC,
// UTS and cgroup namespaces (and a network namespace when offline), its
// uid and gid mapped to themselves. A standalone init gets argv[2] ==
// standaloneArg and one more descriptor after the protocol's: its own
// file, which the parent executes as /proc/self/fd/N, so that the file it
// checked is the file that runs.
//
//	fd 3  config: for a standalone init, first the parent's build
//	      Fingerprint (fingerprint.go) and a newline; then one JSON
//	      initConfig, then EOF. The init reads it before
//	      doing anything else, and the parent writes it only after putting
//	      the init in its cgroup, finding the git directories the init must
//	      protect and reading, for the pids watch, the init's pid
//	      namespace while the init is still dumpable — so the init does
//	      nothing before it is limited and watched.
//	fd 4  status: one JSON initStatus, then EOF: {error, kind} if
//	      the init fails before the command starts (kind "ns" — namespaces
//	      refused — is the only failure that lets ModeAuto fall back to
//	      Landlock; kind "stale" — the parent's fingerprint is not the
//	      init's own, which wins over any complaint about the
//	      configuration, so inits of every later build keep to it — makes
//	      the parent start the same sandbox again with /proc/self/exe),
//	      {probe} when probing, or {started: true} once the
//	      command is forked — followed, when the command has exited and
//	      every other process of the sandbox is dead and reaped, by a
//	      second record {exited: true}, on which the parent removes the
//	      private temp dir while the kernel tears the namespaces down (a
//	      killed init leaves no such record, and the parent removes it
//	      after the wait). EOF with no bytes means the init died before
//	      a word (a timeout fired during set-up, or the binary is not our
//	      init): readStatus reports that as errNoStart, and a record that
//	      says none of the three as a set-up failure.
//
// Before reading its config the init marks every descriptor above stderr
// close-on-exec, so the command inherits stdio and nothing else.
//
// In namespace mode the init is the first process of its pid namespace,
// to which the kernel delivers from inside only the signals it handles. It builds the mount tree, then, on a dedicated locked OS
// thread, drops every capability, sets no_new_privs, applies Landlock and
// seccomp to that thread alone and forks the command from it; the thread
// then exits, taking its restrictions with it. The init itself keeps
// running unrestricted but out of reach: the command cannot ptrace it
// (seccomp, Landlock), read its memory or environment (it is not dumpable
// and the command has no CAP_SYS_PTRACE), or signal it (Landlock signal
// scoping, and the signals it catches and drops). In Landlock mode there
// is no pid namespace: the init becomes a child subreaper instead, so every
// orphaned descendant is reparented to it, and restricts its command thread
// the same way.
//
// The init then reaps every process reparented to it until the command
// exits, kills whatever the command left behind (killDescendants) and exits
// with the command's status; in namespace mode the kernel also kills what
// is left in the pid namespace when the init exits. To end the command
// early (a timeout, Ctrl-C, an output or pids limit) the parent SIGKILLs
// the init in namespace mode; in Landlock mode, where that would orphan the
// command's descendants, it sends SIGTERM, on which the init kills them
// and exits, and SIGKILLs it only if it has not exited two minutes later.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

const initArg = "__forkbomb_sandbox_init"

// standaloneArg, argv[2], tells a standalone init that the parent's
// fingerprint precedes its configuration.
const standaloneArg = "standalone"

// maxInitConfig bounds the configuration the init reads (a few kB in
// practice; 512 .git binds at most).
const maxInitConfig = 16 << 20

func init() {
	// Keep the init's main goroutine on the main thread, so the thread that
	// is restricted and forks the command is never the thread-group leader
	// that signals and /proc address.
	if IsInit() {
		runtime.LockOSThread()
	}
}

// IsInit reports whether this process was started as a sandbox init. The
// binary's main (and a test binary's TestMain) must then call InitMain.
func IsInit() bool {
	return len(os.Args) > 1 && os.Args[1] == initArg
}

// initConfig is everything the init needs; it holds no secret.
type initConfig struct {
	Mode       Mode     `json:"mode"`
	Argv       []string `json:"argv"`
	Env        []string `json:"env"`
	Dir        string   `json:"dir"`
	Writable   []string `json:"writable"`
	ReadOnly   []string `json:"read_only"`
	Toolchains []string `json:"toolchains"`
	GitDirs    []string `json:"git_dirs"`
	Overlay    *Overlay `json:"overlay,omitempty"`
	Scratch    []string `json:"scratch,omitempty"`
	// ScratchLayers, by canonical Scratch path.
	ScratchLayers map[string]ScratchLayers `json:"scratch_layers,omitempty"`
	Home          string                   `json:"home"`
	PrivTmp       string                   `json:"priv_tmp"`
	PrivHome      string                   `json:"priv_home"`
	HideDirs      []string                 `json:"hide_dirs"`
	HideFiles     []string                 `json:"hide_files"`
	Hide          []string                 `json:"hide,omitempty"` // Policy.Hide, canonical
	NewNet        bool                     `json:"new_net"`
	RlimitData    int64                    `json:"rlimit_data,omitempty"`
	RlimitProc    int                      `json:"rlimit_nproc,omitempty"`
	Probe         bool                     `json:"probe,omitempty"`
	// Session: no command; serve Session.Run on fd 5 (session_init_linux.go).
	Session bool `json:"session,omitempty"`
	// Proxy, with NewNet, is the one way out of the network namespace.
	Proxy *proxyConfig `json:"proxy,omitempty"`
	// ListenPort, on the landlock backend, is a proxy's port already
	// listening in the caller's network (Proxy.Listening): the one TCP
	// port the command may connect to.
	ListenPort int `json:"listen_port,omitempty"`
	// User is Policy.User: the ids the caller is mapped to inside.
	User *User `json:"user,omitempty"`
	// Programs: the execute grants (programs_linux.go).
	Programs *programsConfig `json:"programs,omitempty"`
	// Trace: write the init's phases to stderr (trace.go).
	Trace bool `json:"trace,omitempty"`
	// LastPid is the caller's pid namespace's last pid, where the
	// sandbox's pid namespace goes on counting (mountProc); 0 leaves it.
	LastPid int `json:"last_pid,omitempty"`
}

func (r *resolved) initConfig(mode Mode, privTmp, privHome string, noCgroup bool) *initConfig {
	cfg := &initConfig{
		Mode:          mode,
		Argv:          r.Command,
		Dir:           r.Workdir,
		Writable:      append([]string{r.Workdir}, r.ReadWrite...),
		Overlay:       r.Overlay,
		Scratch:       r.Scratch,
		ScratchLayers: r.ScratchLayers,
		ReadOnly:      r.ReadOnly,
		PrivTmp:       privTmp,
		PrivHome:      privHome,
		NewNet:        r.Network != NetworkHost,
		Proxy:         newProxyConfig(r.Proxy),
		ListenPort:    listenPort(r.Proxy),
		User:          r.User,
		HideDirs:      append(append([]string{}, r.HomeDirs...), hiddenDirs...),
		Hide:          r.Hide,
		Programs:      r.programsConfig(),
	}
	cfg.HideFiles = append(cfg.HideFiles, rootOnlySecrets...)
	cfg.HideFiles = append(cfg.HideFiles, credentialPaths(r.Home)...)
	cfg.Toolchains = r.toolchainDirs()
	switch mode {
	case ModeNamespaces:
		cfg.LastPid = lastPid()
		cfg.Home = r.Home
		if cfg.Home == "" {
			cfg.Home = "/home/sandbox"
		}
		cfg.Env = buildEnv(r.Env, r.SetEnv, cfg.Home, "/tmp")
	default:
		cfg.Home = privHome
		cfg.Env = buildEnv(r.Env, r.SetEnv, privHome, privTmp)
	}
	if mode == ModeLandlock {
		cfg.ReadOnly = append(cfg.ReadOnly, r.Scratch...)
		cfg.Scratch = nil
		cfg.ScratchLayers = nil
	}
	if noCgroup {
		cfg.RlimitData = r.Memory
		cfg.RlimitProc = r.Pids
	}
	return cfg
}

// lastPid is the last pid the caller's pid namespace gave, 0 if unknown.
func lastPid() int {
	b, err := os.ReadFile("/proc/sys/kernel/ns_last_pid")
	if err != nil {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// InitMain is the whole life of the init process; it never returns.
func InitMain() {
	os.Exit(initMain())
}

func initMain() int {
	for _, fd := range []int{3, 4} {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
			fmt.Fprintln(os.Stderr, "forkbomb-init: the sandbox init of forkbomb is started by forkbomb, not by hand")
			return ExitSetup
		}
	}
	cfgFile, status := os.NewFile(3, "config"), os.NewFile(4, "status")
	started := monotonic()
	// A standalone init is sent the parent's build fingerprint ahead of its
	// configuration, and compares it with its own before it decodes the
	// configuration. Its own is computed first, on this thread: the
	// configuration is usually waiting by now, and a goroutine computing
	// it meanwhile was measured slower on a busy machine (a second thread
	// to start, a second core to find).
	standalone := len(os.Args) > 2 && os.Args[2] == standaloneArg
	var ownFP string
	var fingerprinted int64
	if standalone {
		ownFP, fingerprinted = fingerprint(), monotonic()
	}
	// Every descriptor the init inherited beyond stdio — its two pipes, and
	// whatever forkbomb's own caller left open (a directory descriptor
	// would open the whole host to the command) — closes at exec. This is
	// the class of escape of CVE-2024-21626 ("Leaky Vessels"), where runc
	// leaked a descriptor of the host's cgroup folder into the container.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		closeInheritedFallback()
	}
	fail := func(kind string, err error) int {
		_ = json.NewEncoder(status).Encode(initStatus{Error: err.Error(), Kind: kind})
		return ExitSetup
	}
	data, err := io.ReadAll(io.LimitReader(cfgFile, maxInitConfig))
	cfgFile.Close()
	if standalone {
		var parentFP []byte
		parentFP, data, _ = bytes.Cut(data, []byte("\n"))
		// Before any complaint about the configuration: an init of
		// another build may not understand it, and must say why.
		if err == nil && !sameBuild(string(parentFP), ownFP) {
			return fail("stale", fmt.Errorf("this %s is from another build than the forkbomb that started it (fingerprint %s, forkbomb's %.80q)", InitName, ownFP, parentFP))
		}
	}
	var cfg initConfig
	if err == nil {
		err = json.Unmarshal(data, &cfg)
	}
	if err != nil {
		return fail("setup", fmt.Errorf("read config: %w", err))
	}
	tr := tracer{}
	if cfg.Trace {
		tr.w = os.Stderr
	}
	tr.markAt("init.main", started)
	if fingerprinted != 0 {
		tr.markAt("init.fingerprinted", fingerprinted)
	}
	tr.mark("init.config-read")
	if cfg.Proxy != nil {
		cfg.Proxy.dirFD = -1 // not opened yet (JSON leaves it 0, stdin)
	}
	// Not dumpable: the command, which has no CAP_SYS_PTRACE, cannot open
	// the init's /proc/PID/mem, environ or root (PID is 1 in namespace
	// mode). A dumpable init would also let the command reach the binary
	// through /proc/PID/exe, the path of CVE-2019-5736.
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)

	switch cfg.Mode {
	case ModeNamespaces:
		// The command can send the first process of a pid namespace only
		// the signals it handles, and Go's default handling of these would
		// end the init (and with it
		// the command's exit status). Catching and dropping them keeps the
		// init alive even without Landlock's signal scoping; caught, not
		// ignored, since an ignored disposition would survive the exec
		// into the command.
		drop := make(chan os.Signal, 16)
		signal.Notify(drop, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGALRM)
		go func() {
			for range drop {
			}
		}()
		if err := setupNamespaces(&cfg); err != nil {
			// Only a refusal to set up namespaces at all (a security
			// module denying mounts in them) may send ModeAuto to the
			// fallback; any later failure — which the repository's
			// content might provoke — is a hard error, so a command
			// cannot downgrade the next run's backend.
			var refused *nsRefused
			if errors.As(err, &refused) {
				return fail("ns", err)
			}
			return fail("setup", err)
		}
	case ModeLandlock:
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			return fail("setup", fmt.Errorf("become child subreaper: %w", err))
		}
	default:
		return fail("setup", fmt.Errorf("unknown mode %q", cfg.Mode))
	}
	tr.mark("init.set-up")
	if err := setRlimits(&cfg); err != nil {
		return fail("setup", err)
	}
	if err := os.Chdir(cfg.Dir); err != nil {
		return fail("setup", fmt.Errorf("enter workdir: %w", err))
	}
	if cfg.Proxy != nil && !cfg.Probe {
		if cfg.Mode != ModeNamespaces {
			return fail("setup", fmt.Errorf("%w (the %s backend has none)", ErrProxyNeedsNetns, cfg.Mode))
		}
		if err := startProxy(cfg.Proxy); err != nil {
			return fail("setup", err)
		}
	}
	if cfg.Probe {
		rep := probeInside(&cfg)
		_ = json.NewEncoder(status).Encode(initStatus{Probe: rep})
		return 0
	}
	if cfg.Session {
		return serveSession(&cfg, status, fail)
	}
	path, err := exec.LookPath(cfg.Argv[0])
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return fail("notfound", fmt.Errorf("%s", cfg.Argv[0]))
		}
		return fail("notexec", fmt.Errorf("%s: %v", cfg.Argv[0], err))
	}
	pid, err := onRestrictedThread(&cfg, func() (int, error) {
		return syscall.ForkExec(path, cfg.Argv, &syscall.ProcAttr{
			Dir:   cfg.Dir,
			Env:   cfg.Env,
			Files: []uintptr{0, 1, 2},
		})
	})
	if err != nil {
		switch {
		case errors.Is(err, syscall.ENOENT):
			return fail("notfound", fmt.Errorf("%s", cfg.Argv[0]))
		case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.ENOEXEC), errors.Is(err, syscall.EPERM):
			return fail("notexec", fmt.Errorf("%s: %v", cfg.Argv[0], err))
		}
		return fail("setup", err)
	}
	// An explicit record, which readStatus requires: an init that died
	// before this point (or a binary that is not our init) leaves a bare
	// EOF, which the parent treats as a set-up failure.
	tr.mark("init.command-execed")
	_ = json.NewEncoder(status).Encode(initStatus{Started: true})
	code := reap(&cfg, pid)
	tr.mark("init.all-reaped")
	// Every other process of the sandbox is dead and reaped (reap and
	// killDescendants): the parent may clean up while the kernel tears
	// down the namespaces, which takes as long as the init's exit.
	_ = json.NewEncoder(status).Encode(initStatus{Exited: true})
	status.Close()
	return code
}

// onRestrictedThread runs start on a fresh OS thread after confining that
// thread. The thread is never unlocked, so it exits with the goroutine.
func onRestrictedThread(cfg *initConfig, start func() (int, error)) (int, error) {
	type result struct {
		pid int
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		if err := restrictThread(cfg); err != nil {
			ch <- result{0, err}
			return
		}
		if cfg.Trace {
			tracer{os.Stderr}.mark("init.restricted")
		}
		pid, err := start()
		ch <- result{pid, err}
	}()
	r := <-ch
	return r.pid, r.err
}

// restrictThread confines the calling thread. Order matters: capabilities
// go first (Landlock and seccomp need none), no_new_privs before Landlock
// and seccomp (both require it without CAP_SYS_ADMIN), seccomp last so the
// Landlock calls are not themselves filtered.
func restrictThread(cfg *initConfig) error {
	if err := dropCapabilities(); err != nil {
		return fmt.Errorf("drop capabilities: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	if err := applyLandlock(cfg); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	if err := applySeccomp(cfg); err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	return nil
}

// reap waits for the command, reaping every orphan meanwhile, then kills
// whatever the command left behind and exits with the command's status.
func reap(cfg *initConfig, pid int) int {
	term := make(chan os.Signal, 1)
	if cfg.Mode == ModeLandlock {
		signal.Notify(term, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	}
	exited := make(chan syscall.WaitStatus, 1)
	go func() {
		for {
			var ws syscall.WaitStatus
			wpid, err := syscall.Wait4(-1, &ws, 0, nil)
			if err == syscall.EINTR {
				continue
			}
			if err != nil {
				exited <- ws
				return
			}
			if wpid == pid {
				exited <- ws
				return
			}
		}
	}()
	var ws syscall.WaitStatus
	select {
	case ws = <-exited:
	case sig := <-term:
		killDescendants(cfg)
		<-exited
		return 128 + int(sig.(syscall.Signal))
	}
	killDescendants(cfg)
	return exitCodeOf(ws)
}

// closeInheritedFallback marks descriptors close-on-exec one by one where
// close_range(2) is missing (kernels before 5.11).
func closeInheritedFallback() {
	entries, _ := os.ReadDir("/proc/self/fd")
	for _, e := range entries {
		var fd int
		if _, err := fmt.Sscan(e.Name(), &fd); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}
