package workerproc

import "testing"

func TestWorldExecArgs(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"forkbomb", "world", "exec", "w.world", "ls"}, true},
		{[]string{"forkbomb", "world", "exec", "--timeout", "5s", "w.world", "ls"}, true},
		{[]string{"forkbomb", "world", "exec", "w.world", "--", "ls --help"}, true},
		{[]string{"forkbomb", "world", "exec", "--help"}, false},
		{[]string{"forkbomb", "world", "exec", "w.world", "-h"}, false},
		{[]string{"forkbomb", "world", "exec"}, false},
		{[]string{"forkbomb", "world", "fork", "a", "b"}, false},
		{[]string{"forkbomb", "run", "world", "exec"}, false},
		{[]string{"forkbomb-world", Arg}, false},
		{[]string{"x.test", "-test.run", "TestX"}, false},
	} {
		if got := worldExec(c.args); got != c.want {
			t.Errorf("worldExec(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}
