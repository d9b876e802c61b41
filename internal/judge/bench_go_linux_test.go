package judge_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/judge"
	"github.com/forkbomb/forkbomb/internal/testutil"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// BenchmarkJudgeGoCmp judges patches to go-cmp (710 tests, `go test
// ./...`, baseline ready) next to the same command run directly — in a
// checkout whose build cache is warm, and in a fresh clone at a new path
// (the clone itself not timed) — one of each per round, interleaved, and
// reports wall and CPU time (this process's own plus every process it
// waited for, the sandboxes' included) with the judge's ratio to each
// peer. Two patches: a new README, whose compiled output is unchanged,
// and the honest fix to cmp/cmpopts.
//
//	go test -run '^$' -bench JudgeGoCmp -benchtime 3x ./internal/judge
func BenchmarkJudgeGoCmp(b *testing.B) {
	repo, fixed := goCmpRepo(b)
	patches := map[string][]byte{
		"readme": makePatch(b, repo, map[string]edit{"NOTES.md": {content: "notes\n"}}),
		"fix":    makePatch(b, repo, map[string]edit{"cmp/cmpopts/equate.go": {content: fixed}}),
	}
	direct := func(dir string) func() {
		return func() {
			c := exec.Command("go", "test", "-count=1", "./...")
			c.Dir = dir
			c.Run() // the base fails a test: exit 1
		}
	}
	checkout := filepath.Join(b.TempDir(), "checkout")
	testutil.Git(b, "", "clone", "-q", repo, checkout)
	direct(checkout)() // warm
	s, err := workspace.Open(filepath.Join(b.TempDir(), "state"))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	j, err := judge.Prepare(ctx, judge.Options{Store: s, CacheDir: filepath.Join(b.TempDir(), "cache"), Repo: repo, Test: "go test ./..."})
	if err != nil {
		b.Fatal(err)
	}
	judgeOne := func(name string) func() {
		return func() {
			vs, err := j.Judge(ctx, [][]byte{patches[name]})
			if err != nil {
				b.Fatal(err)
			}
			if name == "fix" && vs[0].Verdict != event.Pass {
				b.Fatalf("the fix did not pass: %s", vs[0].Reason)
			}
		}
	}
	judgeOne("readme")() // warm: the pid 1's first fork
	// The same judge with its build cache warmed (judge/warm.go), as a
	// race's is: the sentinels' compiled tests are cached.
	jw, err := judge.Prepare(ctx, judge.Options{Store: s, CacheDir: filepath.Join(b.TempDir(), "cache"), Repo: repo, Test: "go test ./...", Warm: true})
	if err != nil {
		b.Fatal(err)
	}
	defer jw.Close()
	if ok, why := jw.WaitWarm(ctx); !ok {
		b.Fatalf("the build cache was not warmed: %s", why)
	}
	judgeWarm := func(name string) func() {
		return func() {
			vs, err := jw.Judge(ctx, [][]byte{patches[name]})
			if err != nil {
				b.Fatal(err)
			}
			if name == "fix" && vs[0].Verdict != event.Pass {
				b.Fatalf("the fix did not pass: %s", vs[0].Reason)
			}
			if vs[0].Sentinels == nil || vs[0].Sentinels.Checked == 0 || len(vs[0].Sentinels.Wrong) > 0 {
				b.Fatalf("the sentinels were not checked: %+v", vs[0].Sentinels)
			}
		}
	}
	type cost struct{ wall, cpu time.Duration }
	total := map[string]*cost{}
	measure := func(name string, f func()) {
		c0 := testutil.CPUTime()
		start := time.Now()
		f()
		if total[name] == nil {
			total[name] = &cost{}
		}
		total[name].wall += time.Since(start)
		total[name].cpu += testutil.CPUTime() - c0
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		clone := filepath.Join(b.TempDir(), "clone")
		testutil.Git(b, "", "clone", "-q", repo, clone)
		measure("clone", direct(clone))
		measure("readme", judgeOne("readme"))
		measure("checkout", direct(checkout))
		measure("fix", judgeOne("fix"))
		measure("readme-warm", judgeWarm("readme"))
		measure("fix-warm", judgeWarm("fix"))
	}
	b.StopTimer()
	n := float64(b.N)
	for _, name := range []string{"checkout", "clone", "readme", "fix", "readme-warm", "fix-warm"} {
		b.ReportMetric(total[name].wall.Seconds()*1000/n, name+"-wall-ms")
		b.ReportMetric(total[name].cpu.Seconds()*1000/n, name+"-cpu-ms")
	}
	for _, judged := range []string{"readme", "fix", "readme-warm", "fix-warm"} {
		for _, peer := range []string{"checkout", "clone"} {
			b.ReportMetric(float64(total[judged].wall)/float64(total[peer].wall), judged+"/"+peer+"-wall-x")
			b.ReportMetric(float64(total[judged].cpu)/float64(total[peer].cpu), judged+"/"+peer+"-cpu-x")
		}
	}
}
