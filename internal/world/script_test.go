package world

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/testutil"
)

// scriptCases are scripts run in a fresh world whose /work holds the files in setup. Where
// bash is true the behaviour is standard and the case is also run by real bash (with the
// host's coreutils) in a temporary directory holding the same files: both must agree.
var scriptCases = []struct {
	name, script, want string
	status             int
	bash               bool
}{
	{"echo", `echo hello world`, "hello world\n", 0, true},
	{"vars", `a=1; b="$a 2"; echo "$b"`, "1 2\n", 0, true},
	{"arith", `echo $((3*4+1))`, "13\n", 0, true},
	{"redirect", `echo x > f; echo y >> f; cat f`, "x\ny\n", 0, true},
	{"pipe", `printf 'b\na\nc\n' | sort`, "a\nb\nc\n", 0, true},
	{"sort -rn", `printf '10\n9\n100\n' | sort -n -r`, "100\n10\n9\n", 0, true},
	{"uniq -c", `printf 'a\na\nb\n' | uniq -c`, "      2 a\n      1 b\n", 0, true},
	{"head", `seq 20 | head -3`, "1\n2\n3\n", 0, true},
	{"head -n", `seq 20 | head -n 2`, "1\n2\n", 0, true},
	{"tail", `seq 20 | tail -n 2`, "19\n20\n", 0, true},
	{"tail +", `seq 5 | tail -n +4`, "4\n5\n", 0, true},
	{"wc -l", `printf 'a\nb\n' | wc -l`, "2\n", 0, true},
	{"cut", `echo a:b:c | cut -d: -f2,3`, "b:c\n", 0, true},
	{"tr", `echo hello | tr a-z A-Z`, "HELLO\n", 0, true},
	{"tr -d", `echo hello | tr -d l`, "heo\n", 0, true},
	{"grep", `printf 'one\ntwo\nthree\n' | grep t`, "two\nthree\n", 0, true},
	{"grep -v -c", `printf 'one\ntwo\nthree\n' | grep -vc t`, "1\n", 0, true},
	{"grep -n -i", `printf 'One\ntwo\n' | grep -ni one`, "1:One\n", 0, true},
	{"grep -E -o", `echo a1b22c333 | grep -Eo '[0-9]+'`, "1\n22\n333\n", 0, true},
	{"grep -F", `echo 'a.b axb' | grep -Fo a.b`, "a.b\n", 0, true},
	{"grep none", `echo a | grep b`, "", 1, true},
	{"grep -r -l", `mkdir -p d/e; echo hit > d/e/f; echo miss > d/g; grep -rl hit d`, "d/e/f\n", 0, true},
	{"sed s", `echo hello | sed 's/l/L/'`, "heLlo\n", 0, true},
	{"sed s g", `echo hello | sed 's/l/L/g'`, "heLLo\n", 0, true},
	{"sed -n p", `seq 5 | sed -n '2,3p'`, "2\n3\n", 0, true},
	{"sed d", `seq 4 | sed '/3/d'`, "1\n2\n4\n", 0, true},
	{"sed -E groups", `echo ab12 | sed -E 's/([a-z]+)([0-9]+)/\2\1/'`, "12ab\n", 0, true},
	{"sed $", `seq 3 | sed -n '$p'`, "3\n", 0, true},
	{"sed -i", `printf 'a\nb\n' > f; sed -i 's/a/z/' f; cat f`, "z\nb\n", 0, true},
	{"awk", `printf 'a 1\nb 2\n' | awk '{s+=$2} END {print s}'`, "3\n", 0, true},
	{"awk -F", `echo a,b,c | awk -F, '{print $2}'`, "b\n", 0, true},
	{"base64", `echo hi | base64; echo aGkK | base64 -d`, "aGkK\nhi\n", 0, true},
	{"sha256sum", `printf abc | sha256sum`, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  -\n", 0, true},
	{"md5sum", `printf abc | md5sum`, "900150983cd24fb0d6963f7d28e17f72  -\n", 0, true},
	{"seq step", `seq 1 2 7`, "1\n3\n5\n7\n", 0, true},
	{"basename dirname", `basename /a/b/c.txt .txt; dirname /a/b/c.txt`, "c\n/a/b\n", 0, true},
	{"functions", `f() { echo "in f: $1"; return 3; }; f x; echo $?`, "in f: x\n3\n", 0, true},
	{"for", `for i in 1 2 3; do printf '%s-' $i; done; echo`, "1-2-3-\n", 0, true},
	{"while read", `printf 'a\nb\n' | while read l; do echo "<$l>"; done`, "<a>\n<b>\n", 0, true},
	{"case", `case foo in f*) echo yes;; *) echo no;; esac`, "yes\n", 0, true},
	{"cmdsubst", `x=$(echo inner); echo "[$x]"`, "[inner]\n", 0, true},
	{"subshell", `(cd /; true); echo ok`, "ok\n", 0, true},
	{"exit status", `false; echo $?`, "1\n", 0, true},
	{"exit", `echo a; exit 7; echo b`, "a\n", 7, true},
	{"set -e", `set -e; echo a; false; echo b`, "a\n", 1, true},
	{"test", `[ -d . ] && [ ! -e nope ] && echo ok`, "ok\n", 0, true},
	{"mkdir ls", `mkdir -p a/b; touch a/b/c a/d; ls a; ls a/b`, "b\nd\nc\n", 0, true},
	{"cp mv rm", `echo 1 > x; cp x y; mv y z; rm x; ls; cat z`, "z\n1\n", 0, true},
	{"cp -r", `mkdir -p s/t; echo 1 > s/t/f; cp -r s d; cat d/t/f`, "1\n", 0, true},
	{"ln -s readlink", `echo t > target; ln -s target link; readlink link; cat link`, "target\nt\n", 0, true},
	{"ln hard", `echo t > a; ln a b; echo u >> b; cat a; stat -c %h a`, "t\nu\n2\n", 0, true},
	{"rmdir", `mkdir e; rmdir e; ls`, "", 0, true},
	{"chmod", `touch f; chmod 640 f; stat -c %a f; chmod u+x f; stat -c %a f`, "640\n740\n", 0, true},
	{"find", `mkdir -p a/b; touch a/b/c.txt a/d.go; find a -name '*.txt'`, "a/b/c.txt\n", 0, true},
	{"find type", `mkdir -p a/b; touch a/f; find a -type d`, "a\na/b\n", 0, true},
	{"xargs", `printf 'a\nb\n' | xargs echo got`, "got a b\n", 0, true},
	{"tee", `echo x | tee f; cat f`, "x\nx\n", 0, true},
	{"diff same", `echo a > x; echo a > y; diff x y; echo $?`, "0\n", 0, true},
	{"printf", `printf '%s=%d\n' a 5`, "a=5\n", 0, true},
	{"realpath", `mkdir -p a/b; ln -s a/b l; cd l; realpath .`, "", 0, false},
	{"glob", `touch x1 x2 y; echo x*`, "x1 x2\n", 0, true},
	{"heredoc", "cat <<EOF\nline $((1+1))\nEOF", "line 2\n", 0, true},
	{"not found", `nosuchcommand`, "", 127, true},
	{"jq", `echo '{"a":{"b":[1,2,3]}}' | jq -c '.a.b | map(.*2)'`, "[2,4,6]\n", 0, false},
	{"jq -r", `echo '{"n":"x"}' | jq -r .n`, "x\n", 0, false},
	{"tar gzip", `mkdir t; echo 1 > t/f; tar -czf t.tgz t; rm -r t; tar -xzf t.tgz; cat t/f`, "1\n", 0, true},
	{"gzip gunzip", `echo data > f; gzip f; ls; gunzip f.gz; cat f`, "f.gz\ndata\n", 0, true},
	{"which", `which ls`, "/bin/ls\n", 0, false},
	{"tilde user refused", `echo ~root`, "", 2, false},
	{"tilde home", `echo ~/x`, "/work/x\n", 0, false},
	{"pwd", `cd /work; mkdir q; cd q; pwd`, "/work/q\n", 0, false},
	{"write outside", `echo x > /etc/x`, "", 1, false},
	{"tmp", `echo x > /tmp/f; cat /tmp/f`, "x\n", 0, false},
}

func TestScripts(t *testing.T) {
	t.Parallel()
	bashPath, bashErr := exec.LookPath("bash")
	for _, tc := range scriptCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := New()
			res, err := w.Exec(context.Background(), tc.script, nil, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if tc.name == "realpath" {
				if got := string(res.Stdout); got != "/work/a/b\n" {
					t.Errorf("stdout %q", got)
				}
				return
			}
			if string(res.Stdout) != tc.want || res.Status != tc.status {
				t.Errorf("world: stdout %q status %d; want %q %d (stderr %q)", res.Stdout, res.Status, tc.want, tc.status, res.Stderr)
			}
			if !tc.bash {
				return
			}
			if bashErr != nil {
				testutil.SkipOrFail(t, "bash not found: %v", bashErr)
			}
			dir := t.TempDir()
			c := exec.Command(bashPath, "-c", tc.script)
			c.Dir = dir
			c.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C", "HOME=" + dir}
			out, err := c.Output()
			st := 0
			if ee, ok := err.(*exec.ExitError); ok {
				st = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if string(out) != tc.want || st != tc.status {
				t.Errorf("bash disagrees with the table: stdout %q status %d", out, st)
			}
		})
	}
}

// TestStateAcrossExecs: cwd, plain and exported variables, arrays, functions, aliases and
// options survive from one exec to the next, also after exit N, a set -e failure and a syntax
// error.
func TestStateAcrossExecs(t *testing.T) {
	t.Parallel()
	w := New()
	steps := []struct{ script, want string }{
		{`mkdir -p d; cd d; plain=1; export exp=2; arr=(x y z); declare -A m; m[k]=v; f() { echo "f:$1"; }; shopt -s expand_aliases; alias hi='echo alias-hi'; set -o pipefail; exit 5`, ""},
		{`echo "$PWD $plain $exp ${arr[1]} ${m[k]}"; f a; hi; printenv exp; set -e; false; echo unreached`, "/work/d 1 2 y v\nf:a\nalias-hi\n2\n"},
		{`if then fi`, ""},
		{`echo "$plain"; f b; shopt -o pipefail; shopt -o errexit`, "1\nf:b\npipefail\ton\nerrexit\ton\n"},
	}
	for i, s := range steps {
		// Each step reads the world back from its file, as a new process would.
		b, err := w.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if w, err = Decode(b, 0); err != nil {
			t.Fatal(err)
		}
		res, err := w.Exec(context.Background(), s.script, nil, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if got := string(res.Stdout); got != s.want {
			t.Errorf("step %d: stdout %q, want %q (stderr %q)", i, got, s.want, res.Stderr)
		}
	}
	if w.State.Turns != len(steps) {
		t.Errorf("turns %d, want %d", w.State.Turns, len(steps))
	}
	if !strings.Contains(strings.Join(w.State.Options, ","), "shopt -o -s errexit") {
		t.Errorf("errexit not kept: %v", w.State.Options)
	}
}
