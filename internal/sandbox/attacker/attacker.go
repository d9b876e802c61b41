//go:build linux || darwin

// Package attacker is the hostile program the sandbox's tests run inside a
// sandbox: each verb tries one way out and prints what it got. The tests
// never trust that output for the verdict where an outside check exists
// (files on disk, listeners, host process tables); it is evidence only.
package attacker

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Main runs one attack verb and returns the exit status: 0 when the attempt
// succeeded (the sandbox leaked), 3 when it was refused.
func Main(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "attacker: no verb")
		return 2
	}
	verb, args := args[0], args[1:]
	switch verb {
	case "tcp":
		return dial("tcp", args[0])
	case "udp":
		return dial("udp", args[0])
	case "unix":
		return dial("unix", args[0])
	case "http":
		return httpCall(args)
	case "dns":
		addrs, err := net.LookupHost(args[0])
		return report(err, fmt.Sprint(addrs))
	case "kill":
		pid, _ := strconv.Atoi(args[0])
		return report(syscall.Kill(pid, syscall.SIGKILL), "killed")
	case "read":
		leaked := false
		for _, p := range args {
			if data, err := os.ReadFile(p); err == nil {
				fmt.Printf("read %s: %s\n", p, data)
				leaked = true
			} else {
				fmt.Printf("read %s: %v\n", p, err)
			}
		}
		if leaked {
			return 0
		}
		return 3
	case "write":
		return report(os.WriteFile(args[0], []byte(args[1]), 0o644), "wrote "+args[0])
	case "env":
		for _, kv := range os.Environ() {
			fmt.Println(kv)
		}
		return 0
	case "daemonize":
		return daemonize(args)
	case "sleep":
		d, _ := time.ParseDuration(args[0])
		time.Sleep(d)
		return 0
	case "alloc":
		return alloc(args[0])
	case "forkbomb":
		return forkbomb(args)
	case "exec":
		// A compiled helper that runs a program itself, with no shell.
		err := syscall.Exec(args[0], args, os.Environ())
		return report(err, "")
	}
	if code, ok := platformVerb(verb, args); ok {
		return code
	}
	fmt.Fprintln(os.Stderr, "attacker: unknown verb", verb)
	return 2
}

func report(err error, ok string) int {
	if err != nil {
		fmt.Println("refused:", err)
		return 3
	}
	fmt.Println("ok:", ok)
	return 0
}

// httpCall GETs args[0] and prints the reply, or with a size in args[1]
// POSTs that many bytes and checks the reply echoes them whole (through a
// forwarder, both directions and the half-close of each).
func httpCall(args []string) int {
	client := &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 20 * time.Second}
	var body []byte
	var resp *http.Response
	var err error
	if len(args) > 1 {
		n, _ := strconv.Atoi(args[1])
		body = bytes.Repeat([]byte("0123456789abcdef"), n/16+1)[:n]
		resp, err = client.Post(args[0], "application/octet-stream", bytes.NewReader(body))
	} else {
		resp, err = client.Get(args[0])
	}
	if err != nil {
		return report(err, "")
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		return report(err, "")
	}
	if body != nil {
		if !bytes.Equal(got, body) {
			return report(fmt.Errorf("echo of %d bytes came back as %d different bytes", len(body), len(got)), "")
		}
		return report(nil, fmt.Sprintf("echoed %d bytes", len(body)))
	}
	return report(nil, fmt.Sprintf("%s %s", resp.Status, got))
}

// dial connects to addr and writes a line: 0 when it got through (for a
// stream, once it connected).
func dial(network, addr string) int {
	c, err := net.DialTimeout(network, addr, 2*time.Second)
	if err != nil {
		return report(err, "")
	}
	defer c.Close()
	_, err = c.Write([]byte("leak\n"))
	if err != nil && network != "udp" {
		// a stream that connected is through, whatever its write then met
		// (a listener that counts and closes at once): 0, as a leak
		return report(nil, "connected to "+addr+" (its write: "+err.Error()+")")
	}
	return report(err, "connected to "+addr)
}

// daemonize starts the given command as a detached daemon (new session,
// parent gone), then returns at once.
func daemonize(args []string) int {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, nil, nil
	if err := cmd.Start(); err != nil {
		return report(err, "")
	}
	_ = cmd.Process.Release()
	return report(nil, fmt.Sprintf("daemon pid %d", cmd.Process.Pid))
}

// alloc allocates and touches the given number of bytes.
func alloc(size string) int {
	n, _ := strconv.ParseInt(size, 10, 64)
	chunks := [][]byte{}
	for got := int64(0); got < n; got += 16 << 20 {
		b := make([]byte, 16<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		chunks = append(chunks, b)
	}
	fmt.Println("ok: allocated", len(chunks)*16, "MiB")
	return 0
}

// forkbomb starts sleeping children until fork fails or n are running,
// and prints how many it started.
func forkbomb(args []string) int {
	n, _ := strconv.Atoi(args[0])
	started := 0
	for ; started < n; started++ {
		cmd := exec.Command("/bin/sleep", args[1])
		if err := cmd.Start(); err != nil {
			fmt.Println("refused after", started, "children:", err)
			return 3
		}
	}
	fmt.Println("ok: started", started)
	return 0
}

// Marker returns an argument that makes a process findable in the host's
// process table.
func Marker(tag string) string {
	return strings.ReplaceAll(fmt.Sprintf("%d.%s", time.Now().UnixNano()%1000000, tag), "/", "_")
}
