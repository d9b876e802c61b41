package sandbox

// The session protocol (Start and Session.Run in session_linux.go).
//
// A session's init is started as a one-command init is, by the same
// startInit (start_linux.go; the protocol in init_linux.go), with the same
// fd 3 config and fd 4 status, plus
//
//	fd 5  control: one end of an AF_UNIX SOCK_SEQPACKET socketpair, so
//	      every message keeps its boundaries.
//
// Its config has Session set and no command. The init builds the sandbox
// (namespaces, mounts, rlimits, the proxy) as for one command, then
// confines one dedicated, locked OS thread — capabilities dropped,
// no_new_privs, Landlock, seccomp, in that order — and keeps that thread
// for its whole life: every command is forked from it, so each inherits
// the very restrictions a one-command init gives its command. Only then
// does it write {started: true} on fd 4 and close it.
//
// Then, on fd 5, one command at a time:
//
//	parent → init  {"argv": [...]} with SCM_RIGHTS carrying exactly three
//	               descriptors, the command's stdin, stdout and stderr.
//	init → parent  {"error", "kind"} if it could not start the command
//	               (kinds as in initStatus), or {"started": true}; then,
//	               once the command has exited AND every other process in
//	               the sandbox is dead and reaped, {"exit": N}.
//	parent → init  {"kill": true} at any time: the init kills the running
//	               command and everything else in the sandbox, then sends
//	               its {"exit"}. A kill that arrives between commands (it
//	               crossed the exit on the wire) is ignored.
//
// EOF on fd 5 (Session.Close, or forkbomb gone) makes the init kill
// everything and exit. The init is the only process the parent ever
// leaves running between commands, so "everything else" is the command's
// descendants however they hid — background jobs, setsid, double forks:
// in namespace mode kill(-1) from the pid namespace's init reaches every
// other process in it; in Landlock mode the init is their child subreaper
// and kills its children until none is left (killDescendants). This is
// why a session runs one command at a time: the sandbox's pid namespace
// is the command's.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// sessionFD is the init's end of the control socket.
const sessionFD = 5

// sessionMaxMsg bounds one control message: a command's argv, JSON. One
// exec argument cannot exceed 128 KiB (MAX_ARG_STRLEN) anyway.
const sessionMaxMsg = 192 << 10

// sessionMsg is every message of the control socket, both ways.
type sessionMsg struct {
	Argv    []string `json:"argv,omitempty"`
	Kill    bool     `json:"kill,omitempty"`
	Started bool     `json:"started,omitempty"`
	Exit    *int     `json:"exit,omitempty"`
	Error   string   `json:"error,omitempty"`
	Kind    string   `json:"kind,omitempty"`
	fds     []int
}

type forkReq struct {
	path  string
	argv  []string
	files []uintptr
	reply chan forkRes
}

type forkRes struct {
	pid int
	err error
}

// serveSession is the life of a session's init once its sandbox is built.
func serveSession(cfg *initConfig, status *os.File, fail func(string, error) int) int {
	forks := make(chan forkReq)
	ready := make(chan error, 1)
	go func() {
		// Locked and never unlocked: the thread keeps its restrictions and
		// exits with the init; no other goroutine ever runs on it.
		runtime.LockOSThread()
		if err := restrictThread(cfg); err != nil {
			ready <- err
			return
		}
		ready <- nil
		for r := range forks {
			pid, err := syscall.ForkExec(r.path, r.argv, &syscall.ProcAttr{
				Dir: cfg.Dir, Env: cfg.Env, Files: r.files,
				// Its own session and process group, as a one-command
				// init gives its command.
				Sys: &syscall.SysProcAttr{Setsid: true},
			})
			r.reply <- forkRes{pid, err}
		}
	}()
	if err := <-ready; err != nil {
		return fail("setup", err)
	}
	_ = json.NewEncoder(status).Encode(initStatus{Started: true})
	status.Close()

	term := make(chan os.Signal, 1)
	if cfg.Mode == ModeLandlock {
		signal.Notify(term, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	}
	msgs := make(chan sessionMsg)
	go readSessionMsgs(msgs)
	for {
		select {
		case sig := <-term:
			killDescendants(cfg)
			return 128 + int(sig.(syscall.Signal))
		case m, ok := <-msgs:
			if !ok {
				killDescendants(cfg)
				return 0
			}
			if m.Argv == nil {
				closeFDs(m.fds)
				continue // a late kill, or nothing to run
			}
			if code, end := sessionCommand(cfg, m, forks, msgs, term); end {
				return code
			}
		}
	}
}

// sessionCommand runs one command to its end and kills what it left. It
// reports end when the session must end (EOF, or SIGTERM in Landlock
// mode) with the init's exit code.
func sessionCommand(cfg *initConfig, m sessionMsg, forks chan<- forkReq, msgs <-chan sessionMsg, term <-chan os.Signal) (int, bool) {
	if len(m.fds) != 3 || len(m.Argv) == 0 {
		closeFDs(m.fds)
		sendSessionMsg(sessionMsg{Error: "a command needs argv and three descriptors", Kind: "setup"})
		return 0, false
	}
	pid, err := sessionFork(cfg, m, forks)
	closeFDs(m.fds) // the command has its own copies
	if err != nil {
		st := startError(m.Argv[0], err)
		sendSessionMsg(sessionMsg{Error: st.Error, Kind: st.Kind})
		return 0, false
	}
	sendSessionMsg(sessionMsg{Started: true})
	exited := make(chan syscall.WaitStatus, 1)
	go func() { exited <- waitFor(pid) }()
	var ws syscall.WaitStatus
	for done := false; !done; {
		select {
		case ws = <-exited:
			done = true
		case sig := <-term:
			killDescendants(cfg)
			<-exited
			return 128 + int(sig.(syscall.Signal)), true
		case k, ok := <-msgs:
			if !ok {
				killDescendants(cfg)
				<-exited
				return 0, true
			}
			closeFDs(k.fds)
			if k.Kill {
				killDescendants(cfg)
				ws = <-exited
				done = true
			}
		}
	}
	// Whatever the command started and left — in the background, in a
	// session of its own, double-forked — dies with it.
	killDescendants(cfg)
	code := exitCodeOf(ws)
	sendSessionMsg(sessionMsg{Exit: &code})
	return 0, false
}

func sessionFork(cfg *initConfig, m sessionMsg, forks chan<- forkReq) (int, error) {
	// Looked up in the sandbox's view with the command's PATH, as a
	// one-command init does.
	path, err := exec.LookPath(m.Argv[0])
	if err != nil {
		return 0, err
	}
	reply := make(chan forkRes, 1)
	forks <- forkReq{path: path, argv: m.Argv, reply: reply,
		files: []uintptr{uintptr(m.fds[0]), uintptr(m.fds[1]), uintptr(m.fds[2])}}
	r := <-reply
	return r.pid, r.err
}

// startError words a failure to start a command as initStatus does.
func startError(name string, err error) initStatus {
	switch {
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, os.ErrNotExist), errors.Is(err, syscall.ENOENT):
		return initStatus{Error: name, Kind: "notfound"}
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.ENOEXEC), errors.Is(err, syscall.EPERM), errors.Is(err, exec.ErrDot):
		return initStatus{Error: fmt.Sprintf("%s: %v", name, err), Kind: "notexec"}
	}
	return initStatus{Error: err.Error(), Kind: "setup"}
}

// waitFor reaps every process reparented to the init until pid exits.
func waitFor(pid int) syscall.WaitStatus {
	for {
		var ws syscall.WaitStatus
		wpid, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || wpid == pid {
			return ws // ECHILD: killDescendants reaped it
		}
	}
}

// readSessionMsgs feeds the control socket's messages to msgs and closes
// it at EOF or on any error: a garbled message ends the session.
func readSessionMsgs(msgs chan<- sessionMsg) {
	defer close(msgs)
	buf := make([]byte, sessionMaxMsg)
	oob := make([]byte, unix.CmsgSpace(4*4))
	for {
		// MSG_CMSG_CLOEXEC: a descriptor received for one command never
		// leaks into the next.
		n, oobn, flags, _, err := unix.Recvmsg(sessionFD, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			return
		}
		var m sessionMsg
		if oobn > 0 {
			cmsgs, err := unix.ParseSocketControlMessage(oob[:oobn])
			if err != nil {
				return
			}
			for _, c := range cmsgs {
				fds, err := unix.ParseUnixRights(&c)
				if err == nil {
					m.fds = append(m.fds, fds...)
				}
			}
		}
		if flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 || json.Unmarshal(buf[:n], &m) != nil {
			closeFDs(m.fds)
			return
		}
		msgs <- m
	}
}

func sendSessionMsg(m sessionMsg) {
	data, _ := json.Marshal(m)
	for {
		if _, err := unix.Write(sessionFD, data); err != unix.EINTR {
			return
		}
	}
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}
