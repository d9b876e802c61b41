// Command startbench measures how long it takes to start and finish a
// trivial command bare, under forkbomb's sandbox and under bubblewrap, so
// that forkbomb's start-up overhead can be compared with bwrap's.
//
// Usage:
//
//	startbench [-n 200] [-warmup 10] [-label TEXT] [-json] \
//	    -bare '/bin/true' \
//	    -forkbomb '/tmp/fb sandbox --workdir /tmp/wd -- /bin/true' \
//	    -bwrap 'bwrap --unshare-all --die-with-parent --ro-bind / / --dev /dev --proc /proc /bin/true' \
//	    [-floor 'goexec bwrap ... /bin/true']
//
// Each command line is split like a (very small) POSIX shell would: words
// are separated by blanks, '...' is literal, "..." allows \" \\ \$ \` escapes,
// and a backslash outside quotes escapes the next character. There is no
// expansion of any kind. -bwrap, -before and -floor may be empty to leave
// that variant out; the ratios to bwrap need -bwrap.
//
// The variants are run round-robin, one of each per iteration, with the
// starting variant rotating, so that machine noise (another process, a CPU
// frequency change) hits them all alike. Each sample is the wall time from
// just before fork/exec until wait returns, with stdin, stdout and stderr on
// /dev/null. The command must exit 0; any other status aborts the run.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"
)

// variant is one command line to time.
type variant struct {
	Name string   `json:"name"`
	Argv []string `json:"argv"`

	wall []time.Duration // one per iteration
	cpu  []time.Duration // user+sys of the process and the children it reaped
}

// stats is what is reported for one variant.
type stats struct {
	Name       string   `json:"name"`
	Argv       []string `json:"argv"`
	MedianMS   float64  `json:"median_ms"`
	P90MS      float64  `json:"p90_ms"`
	MinMS      float64  `json:"min_ms"`
	MeanMS     float64  `json:"mean_ms"`
	CPUMedMS   float64  `json:"cpu_median_ms"`         // user+sys, median
	OverheadMS *float64 `json:"overhead_ms,omitempty"` // median minus bare median
	// CPUOverheadMS is the CPU median minus bare's: on a shared machine
	// CPU time is steadier than wall time, so both are reported.
	CPUOverheadMS *float64 `json:"cpu_overhead_ms,omitempty"`
}

// report is the whole result, printed as a table or as one JSON object.
type report struct {
	Label    string   `json:"label,omitempty"`
	N        int      `json:"n"`
	Warmup   int      `json:"warmup"`
	Variants []stats  `json:"variants"`
	Ratio    *float64 `json:"forkbomb_over_bwrap_overhead,omitempty"`
	CPURatio *float64 `json:"forkbomb_over_bwrap_cpu_overhead,omitempty"`
	// The same two ratios for -before, when given.
	BeforeRatio    *float64 `json:"before_over_bwrap_overhead,omitempty"`
	BeforeCPURatio *float64 `json:"before_over_bwrap_cpu_overhead,omitempty"`
	// The same two ratios for -floor, when given: what a Go parent adds to
	// bwrap's own cost, however small the stage after it.
	FloorRatio    *float64 `json:"go_bwrap_over_bwrap_overhead,omitempty"`
	FloorCPURatio *float64 `json:"go_bwrap_over_bwrap_cpu_overhead,omitempty"`
	RatioGoal     float64  `json:"target_ratio"`
	CPUs          int      `json:"cpus"` // runtime.NumCPU: the affinity mask
}

func main() {
	var (
		n         = flag.Int("n", 200, "measured iterations per variant")
		warmup    = flag.Int("warmup", 10, "unmeasured iterations per variant before measuring")
		label     = flag.String("label", "", "heading printed above the table (and put in the JSON)")
		asJSON    = flag.Bool("json", false, "print one JSON object instead of a table")
		bareCmd   = flag.String("bare", "/bin/true", "bare command line")
		fbCmd     = flag.String("forkbomb", "", "forkbomb command line (required)")
		bwrapCmd  = flag.String("bwrap", "", "bwrap command line (empty: not measured)")
		beforeCmd = flag.String("before", "", "another forkbomb command line (an older build), timed in the same rounds and shown as forkbomb-before (empty: not measured)")
		floorCmd  = flag.String("floor", "", "bwrap started by a Go program (bench/cmd/goexec), timed in the same rounds and shown as go+bwrap: the floor of a Go parent with a C sandbox stage (empty: not measured)")
		ratioGoal = flag.Float64("target", 1.5, "target for forkbomb overhead / bwrap overhead (issue 10: 1.5), shown beside the ratio")
	)
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: startbench [flags] -forkbomb 'CMD...' [-bare 'CMD...'] [-bwrap 'CMD...'] [-before 'CMD...'] [-floor 'CMD...']\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 {
		fail(fmt.Errorf("unexpected arguments %q (quote each command line into one flag value)", flag.Args()))
	}
	if *fbCmd == "" {
		flag.Usage()
		os.Exit(2)
	}
	if *n < 1 || *warmup < 0 {
		fail(errors.New("-n must be at least 1 and -warmup not negative"))
	}

	var vs []*variant
	for _, c := range []struct{ name, line string }{
		{"bare", *bareCmd}, {"bwrap", *bwrapCmd}, {"forkbomb", *fbCmd}, {"forkbomb-before", *beforeCmd}, {"go+bwrap", *floorCmd},
	} {
		if c.line == "" && c.name != "bare" && c.name != "forkbomb" {
			continue
		}
		argv, err := splitCommand(c.line)
		if err != nil {
			fail(fmt.Errorf("-%s: %w", c.name, err))
		}
		if len(argv) == 0 {
			fail(fmt.Errorf("-%s: empty command line", c.name))
		}
		vs = append(vs, &variant{Name: c.name, Argv: argv})
	}

	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		fail(err)
	}
	defer devnull.Close()

	// One checked run of each, with its output shown on failure, so that a
	// broken command is not timed 200 times.
	for _, v := range vs {
		if err := check(v.Argv); err != nil {
			fail(fmt.Errorf("%s: %w", v.Name, err))
		}
	}
	for i := range *warmup {
		for j := range vs {
			v := vs[(i+j)%len(vs)]
			if _, _, err := runOnce(v.Argv, devnull); err != nil {
				fail(fmt.Errorf("%s (warm-up): %w", v.Name, err))
			}
		}
	}
	for i := range *n {
		for j := range vs {
			v := vs[(i+j)%len(vs)]
			wall, cpu, err := runOnce(v.Argv, devnull)
			if err != nil {
				fail(fmt.Errorf("%s (iteration %d): %w", v.Name, i+1, err))
			}
			v.wall = append(v.wall, wall)
			v.cpu = append(v.cpu, cpu)
		}
	}

	rep := summarize(vs, *n, *warmup, *label, *ratioGoal)
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fail(err)
		}
		return
	}
	printTable(os.Stdout, rep)
}

// runOnce runs argv once with its standard streams on /dev/null and returns
// its wall time and the CPU time it (and the children it waited for) used.
func runOnce(argv []string, devnull *os.File) (wall, cpu time.Duration, err error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, devnull, devnull
	// Resolve the path outside the timed region, as a shell's hash would.
	if cmd.Err != nil {
		return 0, 0, cmd.Err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	err = cmd.Wait()
	wall = time.Since(start)
	if err != nil {
		return 0, 0, err
	}
	ps := cmd.ProcessState
	return wall, ps.UserTime() + ps.SystemTime(), nil
}

// check runs argv once, capturing its output, and fails with that output
// when it does not exit 0.
func check(argv []string) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%q: %v\n%s", argv, err, strings.TrimSpace(out.String()))
	}
	return nil
}

func summarize(vs []*variant, n, warmup int, label string, goal float64) *report {
	rep := &report{Label: label, N: n, Warmup: warmup, RatioGoal: goal, CPUs: runtime.NumCPU()}
	medians, cpus := map[string]float64{}, map[string]float64{}
	for _, v := range vs {
		s := stats{
			Name:     v.Name,
			Argv:     v.Argv,
			MedianMS: ms(percentile(v.wall, 50)),
			P90MS:    ms(percentile(v.wall, 90)),
			MinMS:    ms(slices.Min(v.wall)),
			MeanMS:   ms(mean(v.wall)),
			CPUMedMS: ms(percentile(v.cpu, 50)),
		}
		medians[v.Name], cpus[v.Name] = s.MedianMS, s.CPUMedMS
		rep.Variants = append(rep.Variants, s)
	}
	for i := range rep.Variants {
		s := &rep.Variants[i]
		if s.Name != "bare" {
			o, c := round(s.MedianMS-medians["bare"]), round(s.CPUMedMS-cpus["bare"])
			s.OverheadMS, s.CPUOverheadMS = &o, &c
		}
	}
	// overBwrap: name's time added over bare, wall and CPU, as multiples
	// of bwrap's (nil where either is missing or bwrap added nothing)
	overBwrap := func(name string) (wall, cpu *float64) {
		v, ok := medians[name]
		bw, okb := medians["bwrap"]
		if !ok || !okb {
			return nil, nil
		}
		if d := bw - medians["bare"]; d > 0 {
			r := round((v - medians["bare"]) / d)
			wall = &r
		}
		if d := cpus["bwrap"] - cpus["bare"]; d > 0 {
			r := round((cpus[name] - cpus["bare"]) / d)
			cpu = &r
		}
		return wall, cpu
	}
	rep.Ratio, rep.CPURatio = overBwrap("forkbomb")
	rep.BeforeRatio, rep.BeforeCPURatio = overBwrap("forkbomb-before")
	rep.FloorRatio, rep.FloorCPURatio = overBwrap("go+bwrap")
	return rep
}

func printTable(w io.Writer, rep *report) {
	if rep.Label != "" {
		fmt.Fprintf(w, "== %s ==\n", rep.Label)
	}
	fmt.Fprintf(w, "%d iterations per variant (+%d warm-up), round-robin, %d CPUs\n", rep.N, rep.Warmup, rep.CPUs)
	for _, s := range rep.Variants {
		fmt.Fprintf(w, "  %-15s median %7.2f ms  p90 %7.2f ms  min %7.2f ms  cpu %6.2f ms", s.Name, s.MedianMS, s.P90MS, s.MinMS, s.CPUMedMS)
		if s.OverheadMS != nil {
			fmt.Fprintf(w, "   overhead %6.2f ms, cpu %6.2f ms", *s.OverheadMS, *s.CPUOverheadMS)
		}
		fmt.Fprintln(w)
	}
	if rep.Ratio != nil {
		fmt.Fprintf(w, "  forkbomb overhead / bwrap overhead = %.2fx wall   (target <= %.2fx)\n", *rep.Ratio, rep.RatioGoal)
	}
	if rep.CPURatio != nil {
		fmt.Fprintf(w, "  forkbomb overhead / bwrap overhead = %.2fx cpu\n", *rep.CPURatio)
	}
	if rep.BeforeRatio != nil && rep.BeforeCPURatio != nil {
		fmt.Fprintf(w, "  forkbomb-before overhead / bwrap overhead = %.2fx wall, %.2fx cpu\n", *rep.BeforeRatio, *rep.BeforeCPURatio)
	}
	if rep.FloorRatio != nil && rep.FloorCPURatio != nil {
		fmt.Fprintf(w, "  go+bwrap overhead / bwrap overhead = %.2fx wall, %.2fx cpu (the floor of a Go parent with a C stage)\n", *rep.FloorRatio, *rep.FloorCPURatio)
	}
}

// percentile returns the p-th percentile (nearest rank) of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	k := int(math.Ceil(p/100*float64(len(s)))) - 1
	k = max(0, min(k, len(s)-1))
	if p == 50 && len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[k]
}

func mean(ds []time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}

func ms(d time.Duration) float64 { return round(float64(d) / float64(time.Millisecond)) }

func round(f float64) float64 { return math.Round(f*1000) / 1000 }

func fail(err error) {
	fmt.Fprintln(os.Stderr, "startbench:", err)
	os.Exit(1)
}

// splitCommand splits a command line into words: blanks separate words,
// '...' is literal, "..." honours \" \\ \$ \` and backslash-newline, and an
// unquoted backslash escapes the next character. Nothing is expanded.
func splitCommand(s string) ([]string, error) {
	var (
		words  []string
		cur    strings.Builder
		inWord bool
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\\':
			inWord = true
			if i+1 >= len(s) {
				return nil, errors.New("trailing backslash")
			}
			i++
			if s[i] != '\n' {
				cur.WriteByte(s[i])
			}
		case c == '\'':
			inWord = true
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unterminated single quote")
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			inWord = true
			closed := false
			for i++; i < len(s); i++ {
				if s[i] == '"' {
					closed = true
					break
				}
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`\n", s[i+1]) >= 0 {
					i++
					if s[i] != '\n' {
						cur.WriteByte(s[i])
					}
					continue
				}
				cur.WriteByte(s[i])
			}
			if !closed {
				return nil, errors.New("unterminated double quote")
			}
		default:
			inWord = true
			cur.WriteByte(c)
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
