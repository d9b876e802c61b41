package world

import (
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"hash"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"mvdan.cc/sh/v3/expand"
)

func cmdSeq(c *cmd, args []string) int {
	nums := make([]int, len(args))
	for i, a := range args {
		v, err := strconv.Atoi(a)
		if err != nil {
			return c.fail("invalid argument: '%s'", a)
		}
		nums[i] = v
	}
	first, step, last := 1, 1, 0
	switch len(nums) {
	case 1:
		last = nums[0]
	case 2:
		first, last = nums[0], nums[1]
	case 3:
		first, step, last = nums[0], nums[1], nums[2]
	default:
		return c.fail("usage: seq [FIRST [STEP]] LAST")
	}
	if step == 0 {
		return c.fail("step is zero")
	}
	// The loop can be longer than any wall time: it stops at the deadline and at the first
	// write the output limit refuses (issue 21: seq 1 100000000000 ran on past --timeout).
	var b []byte
	for v := first; step > 0 && v <= last || step < 0 && v >= last; v += step {
		b = append(strconv.AppendInt(b, int64(v), 10), '\n')
		if len(b) >= 32<<10 {
			if _, err := c.out.Write(b); err != nil || c.ctx.Err() != nil {
				return 1
			}
			b = b[:0]
		}
		if v > 0 && step > 0 && v > math.MaxInt-step || v < 0 && step < 0 && v < math.MinInt-step {
			break
		}
	}
	if _, err := c.out.Write(b); err != nil {
		return 1
	}
	return 0
}

func cmdDate(c *cmd, args []string) int {
	t := c.fs.now().UTC()
	for _, a := range args {
		if a == "+%s" {
			fmt.Fprintln(c.out, t.Unix())
			return 0
		}
		if strings.HasPrefix(a, "+") {
			r := strings.NewReplacer("%Y", "2006", "%m", "01", "%d", "02", "%H", "15", "%M", "04", "%S", "05", "%%", "%")
			fmt.Fprintln(c.out, t.Format(r.Replace(a[1:])))
			return 0
		}
	}
	fmt.Fprintln(c.out, t.Format(time.UnixDate))
	return 0
}

func cmdEnv(c *cmd, args []string) int {
	if len(args) > 0 {
		return c.fail("running a command through env is not supported in a world")
	}
	return cmdPrintenv(c, nil)
}

func cmdPrintenv(c *cmd, args []string) int {
	if len(args) > 0 {
		status := 0
		for _, a := range args {
			v := c.env.Get(a)
			if !v.IsSet() || !v.Exported {
				status = 1
				continue
			}
			fmt.Fprintln(c.out, v.String())
		}
		return status
	}
	for name, v := range c.env.Each {
		if v.Exported && v.IsSet() && v.Kind == expand.String {
			fmt.Fprintf(c.out, "%s=%s\n", name, v.Str)
		}
	}
	return 0
}

func cmdPrintf(c *cmd, args []string) int {
	if len(args) == 0 {
		return c.fail("usage: printf FORMAT [ARGUMENTS...]")
	}
	s, _, err := expand.Format(&expand.Config{}, args[0], args[1:])
	if err != nil {
		return c.failErr(err)
	}
	io.WriteString(c.out, s)
	return 0
}

func cmdBase64(c *cmd, args []string) int {
	set, files, _ := flags(args, "")
	b, st := c.inputs(files)
	if has(set, "d") {
		out, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(string(b)), ""))
		if err != nil {
			return c.fail("invalid input")
		}
		c.out.Write(out)
		return st
	}
	enc := base64.StdEncoding.EncodeToString(b)
	for len(enc) > 76 {
		fmt.Fprintln(c.out, enc[:76])
		enc = enc[76:]
	}
	fmt.Fprintln(c.out, enc)
	return st
}

func sumCmd(c *cmd, args []string, h func() hash.Hash) int {
	_, files, _ := flags(args, "")
	if len(files) == 0 {
		files = []string{"-"}
	}
	status := 0
	for _, f := range files {
		b, err := c.read(f)
		if err != nil {
			status = c.failErr(err)
			continue
		}
		s := h()
		s.Write(b)
		fmt.Fprintf(c.out, "%x  %s\n", s.Sum(nil), f)
	}
	return status
}

func cmdSha256(c *cmd, args []string) int { return sumCmd(c, args, sha256.New) }
func cmdMd5(c *cmd, args []string) int    { return sumCmd(c, args, md5.New) }

func cmdSleep(c *cmd, args []string) int {
	if len(args) != 1 {
		return c.fail("usage: sleep SECONDS")
	}
	f, err := strconv.ParseFloat(args[0], 64)
	if err != nil || f < 0 {
		return c.fail("invalid time interval '%s'", args[0])
	}
	select {
	case <-time.After(time.Duration(f * float64(time.Second))):
		return 0
	case <-c.ctx.Done():
		return 130
	}
}
