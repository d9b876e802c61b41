package tunnel

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"time"
)

// forwarderArg is argv[1] of forkbomb re-executed as the pod's forwarder.
const forwarderArg = "__forkbomb_tunnel"

// Argv is the command that runs the forwarder from bin (forkbomb's binary
// in the pod) on the pod's 127.0.0.1:port.
func Argv(bin string, port int) []string {
	return []string{bin, forwarderArg, strconv.Itoa(port)}
}

// IsForwarder reports whether this process was started as the forwarder.
func IsForwarder() bool { return len(os.Args) > 2 && os.Args[1] == forwarderArg }

// ForwarderMain runs the forwarder on the port in os.Args and exits: 0
// when the host ends the stream (its stdin), 1 when it cannot listen.
func ForwarderMain() {
	port, err := strconv.Atoi(os.Args[2])
	if err != nil || port < 1 || port > 65535 {
		fmt.Fprintln(os.Stderr, "forkbomb tunnel: bad port", os.Args[2])
		os.Exit(1)
	}
	if err := Forward(port, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "forkbomb tunnel:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// Forward is the pod side: it listens on 127.0.0.1:port, says hello, and
// carries each connection over out (frames) and in (the host's frames)
// until in ends. It is not dumpable, so a process of the fork's (the same
// user) cannot take its descriptors through /proc — though what it could
// do with them is only what it may do through the port.
func Forward(port int, in io.Reader, out io.Writer) error {
	if err := notDumpable(); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return err
	}
	m := newMux(out)
	if err := m.send(frame{typ: frameHello, data: []byte(hello)}); err != nil {
		ln.Close()
		return err
	}
	done := make(chan struct{})
	go ping(m, done)
	go accept(m, ln)
	err = read(m, in)
	close(done)
	ln.Close()
	m.closeAll()
	return err
}

// ping says the stream is alive every PingEvery: Serve takes silence as
// a lost tunnel.
func ping(m *mux, done chan struct{}) {
	t := time.NewTicker(PingEvery)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			if m.send(frame{typ: framePing}) != nil {
				return
			}
		}
	}
}

func accept(m *mux, ln net.Listener) {
	var next uint32
	for {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		next++
		c := newConn(next, nc)
		if !m.add(c) {
			nc.Close() // MaxConns open: this one is refused
			continue
		}
		if m.send(frame{typ: frameOpen, id: c.id}) != nil {
			m.forget(c)
			return
		}
		m.start(c)
	}
}

// read applies the host's frames until the stream ends.
func read(m *mux, in io.Reader) error {
	r := bufio.NewReaderSize(in, MaxPayload+headerLen)
	for {
		fr, err := readFrame(r)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		m.apply(fr)
	}
}
