package sandbox

// The seatbelt backend's init: forkbomb itself, exec'd by sandbox-exec
// inside the profile (sandbox_darwin.go), with the arguments
//
//	__forkbomb_seatbelt_init PARENT run ARGV…        run ARGV, then end the sandbox
//	__forkbomb_seatbelt_init PARENT probe OUTSIDE HOME   inspect the sandbox
//
// and the status pipe as fd 3 (status.go): {"started":true} once the
// command runs, or why it could not; {"exited":true} once the command
// ended and every other process of the sandbox with it.
//
// Ending the sandbox. macOS has no pid namespace and no subreaper: a
// process that leaves the session and whose parent exits is adopted by
// launchd, out of any tree forkbomb could walk. What every process of the
// sandbox still shares is the sandbox: the profile lets it signal only
// processes of this same sandbox, and kill(-1) delivers a signal to each
// process the sender may signal — so kill(-1, SIGKILL) from in here
// reaches the sandbox's processes and nothing else of the user's. The
// init checks that this holds before it relies on it: it must not be able
// to signal forkbomb, its parent outside the sandbox. Where that check
// fails the init sends nothing to -1 (it would reach every process of the
// user) and forkbomb kills the sandbox's process group from outside, with
// a warning. The command, which shares the sandbox, can end its init; then
// too only the process group is killed (docs/SECURITY.md says so).

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// seatbeltInitArg makes forkbomb the sandbox's init (IsInit).
const seatbeltInitArg = "__forkbomb_seatbelt_init"

// IsInit reports whether this process was started as a sandbox's init.
func IsInit() bool { return len(os.Args) > 1 && os.Args[1] == seatbeltInitArg }

// InitMain is the whole life of the init; it never returns.
func InitMain() { os.Exit(seatbeltInit(os.Args[2:])) }

func seatbeltInit(args []string) int {
	if _, err := unix.FcntlInt(3, unix.F_GETFD, 0); err != nil || len(args) < 2 {
		fmt.Fprintln(os.Stderr, "forkbomb: the sandbox's init is started by forkbomb, not by hand")
		return ExitSetup
	}
	unix.CloseOnExec(3)
	status := json.NewEncoder(os.NewFile(3, "status"))
	closeInherited()
	parent, _ := strconv.Atoi(args[0])
	// Measured before the command runs, so it says what the profile does.
	scoped := parent > 1 && os.Getppid() == parent && unix.Kill(parent, 0) == unix.EPERM
	_ = unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{})
	mode, rest := args[1], args[2:]
	switch {
	case mode == "probe" && len(rest) == 2:
		_ = status.Encode(initStatus{Probe: seatbeltProbeInside(scoped, rest[0], rest[1])})
		return 0
	case mode != "run" || len(rest) == 0:
		_ = status.Encode(initStatus{Error: fmt.Sprintf("bad init arguments %q", args), Kind: "setup"})
		return ExitSetup
	}

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	cmd := exec.Command(rest[0], rest[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		_ = status.Encode(startFailure(rest[0], err))
		return ExitSetup
	}
	_ = status.Encode(initStatus{Started: true})
	waited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(waited) }()
	// Without a parent-death signal on macOS, the init watches for
	// forkbomb's end itself: its parent becomes launchd.
	orphaned := time.NewTicker(500 * time.Millisecond)
	defer orphaned.Stop()
wait:
	for {
		select {
		case <-waited:
			break wait
		case <-stop:
			break wait
		case <-orphaned.C:
			if os.Getppid() != parent {
				break wait
			}
		}
	}
	end := initStatus{Exited: true}
	if scoped {
		endSandbox()
	} else {
		end.Warning = "signals are not kept within the sandbox here, so its init cannot end every process of it: only its process group was killed"
	}
	select {
	case <-waited:
	case <-time.After(time.Second): // unscoped: forkbomb kills the group
	}
	_ = status.Encode(end)
	if cmd.ProcessState == nil {
		return ExitKilledByLimit
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
		return exitCodeOf(ws)
	}
	return cmd.ProcessState.ExitCode()
}

// startFailure is the record of a command that did not start: not found
// on the sandbox's PATH, not executable (or an exec the profile refused),
// or another failure.
func startFailure(name string, err error) initStatus {
	switch {
	case errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist):
		return initStatus{Error: name, Kind: "notfound"}
	case errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.ENOEXEC):
		return initStatus{Error: fmt.Sprintf("%s: %v", name, err), Kind: "notexec"}
	}
	return initStatus{Error: err.Error(), Kind: "setup"}
}

// endSandbox kills every other process of the sandbox: kill(-1, SIGKILL),
// which the profile confines to it, five times 10 ms apart, so that a
// process forked while one went out dies in the next, or until the kernel
// says no process it may signal is left. It is made with the system
// call's own flag for the BSD meaning (libc's kill passes the POSIX one),
// under which it spares the caller: the init outlives it to say so.
func endSandbox() {
	all := -1
	for range 5 {
		_, _, e := syscall.Syscall(syscall.SYS_KILL, uintptr(all), uintptr(syscall.SIGKILL), 0)
		if e == syscall.ESRCH || e == syscall.EPERM {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// closeInherited marks every descriptor above the status pipe
// close-on-exec: only the three streams reach the command, whatever
// forkbomb's own caller left open (the class of CVE-2024-21626).
func closeInherited() {
	names, err := readDirNames("/dev/fd")
	if err != nil {
		for fd := 4; fd < 4096; fd++ {
			unix.CloseOnExec(fd)
		}
		return
	}
	for _, n := range names {
		if fd, err := strconv.Atoi(n); err == nil && fd > 3 {
			unix.CloseOnExec(fd)
		}
	}
}

func readDirNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// seatbeltProbeInside inspects the sandbox from inside: a write in the
// workdir lands and one beside it (outside, a file of the host) does not,
// the caller's home cannot be listed, an address off the loopback cannot
// be reached, forkbomb cannot be signalled, and ending the sandbox ends a
// child of it but not the init.
func seatbeltProbeInside(scoped bool, outside, home string) *ProbeReport {
	rep := &ProbeReport{}
	rep.addTier("seatbelt", true, "kernel", "sandbox-exec applied the profile: deny by default")
	wd, _ := os.Getwd()
	inside := filepath.Join(wd, ".forkbomb-probe")
	errIn := os.WriteFile(inside, nil, 0o600)
	os.Remove(inside)
	errOut := os.WriteFile(outside, nil, 0o600)
	rep.addTier("file rules", errIn == nil && errors.Is(errOut, fs.ErrPermission), "kernel",
		"writes only in the workdir, --rw paths and a private temp dir and home; .git kept read-only; no hard links")
	if home != "" {
		_, err := os.ReadDir(home)
		rep.addTier("hidden folders", errors.Is(err, fs.ErrPermission), "kernel",
			"homes (but the exposed paths), credential folders, the machine's temp folders and keychains unreadable")
	}
	c, err := net.DialTimeout("tcp", "192.0.2.1:9", time.Second) // TEST-NET-1: never reached
	if c != nil {
		c.Close()
	}
	rep.addTier("network rules", errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES), "kernel",
		"the host's loopback only, no DNS; a proxy network reaches its one port alone")
	rep.addTier("signals", scoped, "kernel", "only the sandbox's own processes can be signalled")
	child := exec.Command("/bin/sleep", "60")
	ended := false
	if scoped && child.Start() == nil {
		endSandbox()
		_ = child.Wait()
		ws, _ := child.ProcessState.Sys().(syscall.WaitStatus)
		ended = ws.Signaled() && ws.Signal() == syscall.SIGKILL
	}
	rep.addTier("process tree", ended, "kernel",
		"the init ends every process of the sandbox, daemons included (kill(-1), which the profile keeps within it)")
	sid, _ := unix.Getsid(0)
	rep.addTier("new session", sid == os.Getpid(), "kernel", "no controlling terminal, so no TIOCSTI into the caller's")
	return rep
}

// addTier adds a layer with its tier.
func (r *ProbeReport) addTier(name string, ok bool, tier, detail string) {
	r.add(name, ok, detail)
	r.Layers[len(r.Layers)-1].Tier = tier
}
