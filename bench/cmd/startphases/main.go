// Command startphases shows where the time of a confined start goes: it
// runs a forkbomb command line N times with FORKBOMB_TRACE_START=1, reads
// the phase lines the parent and the init write to stderr (the sandbox
// package's trace.go: one CLOCK_MONOTONIC timestamp per phase, so both
// processes line up) and prints, per phase, the median time since the one
// before it. The first row is the launch up to the first phase — the
// process's exec, the Go runtime, package initialisers and the CLI — and
// the last is from the last phase to wait returning, the process's exit.
//
// Usage:
//
//	startphases [-n 50] /tmp/fb sandbox --workdir /tmp/wd -- /bin/true
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

func mono() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Sec*1e9 + ts.Nsec
}

func main() {
	n := flag.Int("n", 50, "runs")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: startphases [-n N] FORKBOMB-COMMAND-LINE...")
		os.Exit(2)
	}
	var order []string
	steps := map[string][]float64{}
	var totals []float64
	for range *n {
		cmd := exec.Command(flag.Arg(0), flag.Args()[1:]...)
		cmd.Env = append(os.Environ(), "FORKBOMB_TRACE_START=1")
		var errOut bytes.Buffer
		cmd.Stderr = &errOut
		start := mono()
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "startphases: %v\n%s", err, errOut.String())
			os.Exit(1)
		}
		end := mono()
		type mark struct {
			name string
			t    int64
		}
		marks := []mark{{"launch", start}}
		for _, line := range strings.Split(errOut.String(), "\n") {
			f := strings.Fields(line)
			if len(f) == 4 && f[0] == "forkbomb-trace" {
				t, _ := strconv.ParseInt(f[3], 10, 64)
				marks = append(marks, mark{f[2], t})
			}
		}
		marks = append(marks, mark{"exit", end})
		slices.SortStableFunc(marks, func(a, b mark) int { return int(a.t - b.t) })
		for i := 1; i < len(marks); i++ {
			name := marks[i-1].name + " → " + marks[i].name
			if _, ok := steps[name]; !ok {
				order = append(order, name)
			}
			steps[name] = append(steps[name], float64(marks[i].t-marks[i-1].t)/1e6)
		}
		totals = append(totals, float64(end-start)/1e6)
	}
	fmt.Printf("%d runs of %q; median ms per step (steps in the order first seen)\n", *n, flag.Args())
	for _, name := range order {
		fmt.Printf("  %7.3f  %s  (%d runs)\n", median(steps[name]), name, len(steps[name]))
	}
	fmt.Printf("  %7.3f  total (median of whole runs)\n", median(totals))
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}
