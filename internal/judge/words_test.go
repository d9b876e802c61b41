package judge_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/judge"
	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// TestPolicyErrorInJudgeWords gives the judge a hidden tests folder the
// sandbox refuses to expose (the caller's home, which holds credential
// folders). The judge builds that sandbox policy itself, putting the
// folder in Policy.ReadOnly, so the refusal must name --hidden — what the
// user passed — and not the sandbox command's --ro, which nobody passed;
// the cause stays reachable: ErrCannotJudge, ErrInvalidPolicy and the
// PolicyError's own field.
func TestPolicyErrorInJudgeWords(t *testing.T) {
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	repo := fixture(t, map[string]string{"check.sh": "echo '1 passed, 0 failed'\n"})
	s, err := workspace.Open(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	o := judge.Options{Store: s, CacheDir: filepath.Join(s.Root, "..", "judge"), Repo: repo, Test: "/bin/sh check.sh", Hidden: []string{home}}
	_, err = judge.Judge(context.Background(), o, [][]byte{nil})
	if err == nil {
		t.Fatal("the judge exposed a home directory as hidden tests")
	}
	t.Log(err)
	var pe *sandbox.PolicyError
	switch {
	case !errors.Is(err, judge.ErrCannotJudge):
		t.Errorf("%v is not ErrCannotJudge", err)
	case !errors.Is(err, sandbox.ErrInvalidPolicy):
		t.Errorf("%v is not ErrInvalidPolicy", err)
	case !errors.As(err, &pe) || pe.Field != "ReadOnly" || pe.Value != home:
		t.Errorf("%v: PolicyError %+v, want field ReadOnly, value %s", err, pe, home)
	}
	msg := err.Error()
	if !strings.Contains(msg, "--hidden "+home) {
		t.Errorf("%q does not name --hidden %s", msg, home)
	}
	for _, never := range []string{"--ro", "ReadOnly"} {
		if strings.Contains(msg, never) {
			t.Errorf("%q names %s, which the user never passed", msg, never)
		}
	}
	// Positive control: the library's own wording names the field the
	// judge replaced.
	if pe != nil && !strings.Contains((&sandbox.PolicyError{Field: pe.Field, Value: pe.Value, Reason: pe.Reason}).Error(), "ReadOnly") {
		t.Errorf("the sandbox's own wording lost its field")
	}
}
