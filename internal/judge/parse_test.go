package judge

import (
	"context"
	"strings"
	"testing"
)

func TestParsers(t *testing.T) {
	cases := []struct {
		name, out        string
		format           string
		pass, fail, skip int
		named            bool
	}{
		{"go json", `{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"run","Package":"p","Test":"TestB"}
{"Action":"fail","Package":"p","Test":"TestB"}
{"Action":"run","Package":"p","Test":"TestC"}
{"Action":"skip","Package":"p","Test":"TestC"}
{"Action":"run","Package":"p","Test":"TestD"}
{"Action":"fail","Package":"p"}`, "go-test-json", 1, 3, 1, true}, // TestD never finished; the package failed
		{"tap", "TAP version 13\nok 1 - adds\nnot ok 2 - subtracts\nok 3 - later # SKIP\n1..3\n", "tap", 1, 1, 1, true},
		{"cargo", "running 3 tests\ntest a::x ... ok\ntest a::y ... FAILED\ntest a::z ... ignored\n\ntest result: FAILED. 1 passed; 1 failed; 1 ignored\n", "cargo-test", 1, 1, 1, true},
		{"pytest -rA", "PASSED t.py::test_a\nFAILED t.py::test_b - assert\n=== 1 failed, 1 passed in 0.1s ===\n", "pytest", 1, 1, 0, true},
		{"pytest -q", "..F\n2 passed, 1 failed in 0.02s\n", "pytest", 2, 1, 0, false},
		{"plain", "running\nresults: 4 passed, 1 failed, 2 skipped\n", "plain", 4, 1, 2, false},
		{"nothing", "hello\nPASS\nall good\n", "", 0, 0, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := parse([]byte(c.out))
			if c.format == "" {
				if r != nil {
					t.Fatalf("read results from output that has none: %+v", r)
				}
				return
			}
			if r == nil {
				t.Fatal("no results")
			}
			if r.Format != c.format || r.Passed != c.pass || r.Failed != c.fail || r.Skipped != c.skip || r.Named != c.named {
				t.Errorf("got %s %d/%d/%d named=%v, want %s %d/%d/%d named=%v", r.Format, r.Passed, r.Failed, r.Skipped, r.Named, c.format, c.pass, c.fail, c.skip, c.named)
			}
		})
	}
}

func TestStripAndSplit(t *testing.T) {
	patch := `diff --git a/src/x.go b/src/x.go
--- a/src/x.go
+++ b/src/x.go
@@ -1 +1 @@
-a
+b
diff --git a/src/x_test.go b/src/x_test.go
--- a/src/x_test.go
+++ b/src/x_test.go
@@ -1 +1 @@
-a
+b
diff --git "a/odd \"name\".txt" "b/odd \"name\".txt"
new file mode 100644
--- /dev/null
+++ "b/odd \"name\".txt"
@@ -0,0 +1 @@
+x
diff --git a/lib/util.py b/tests/util.py
similarity index 100%
rename from lib/util.py
rename to tests/util.py
diff --git a/a b/c/Makefile b/a b/c/Makefile
--- a/a b/c/Makefile
+++ b/a b/c/Makefile
@@ -1 +1 @@
-x
+y
`
	ctx := context.Background()
	kept, stripped, err := strip(ctx, []byte(patch), StripOptions{Named: []string{"run.sh"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"src/x_test.go", "lib/util.py -> tests/util.py", "a b/c/Makefile"}
	if strings.Join(stripped, "|") != strings.Join(want, "|") {
		t.Errorf("stripped %q, want %q", stripped, want)
	}
	if !strings.Contains(string(kept), "src/x.go") || !strings.Contains(string(kept), `odd \"name\".txt`) || strings.Contains(string(kept), "x_test.go") {
		t.Errorf("kept the wrong sections:\n%s", kept)
	}
	_, s2, _ := strip(ctx, []byte("diff --git a/run.sh b/run.sh\n--- a/run.sh\n+++ b/run.sh\n@@ -1 +1 @@\n-a\n+b\n"), StripOptions{Named: []string{"run.sh"}})
	if len(s2) != 1 {
		t.Errorf("a file the test command names was not stripped")
	}
	_, s3, _ := strip(ctx, []byte(patch), StripOptions{Remove: []string{"Makefile"}, Add: []string{"src/x.go"}})
	if strings.Contains(strings.Join(s3, "|"), "Makefile") || !strings.Contains(strings.Join(s3, "|"), "src/x.go") {
		t.Errorf("--keep/--strip not honoured: %q", s3)
	}
}

func TestStructured(t *testing.T) {
	for in, want := range map[string]string{
		"go test ./...":              "go test -json ./...",
		"go test -json ./...":        "go test -json ./...",
		"pytest -q":                  "pytest -q -rA -p no:cacheprovider",
		"/usr/bin/python3 -m pytest": "/usr/bin/python3 -m pytest -rA -p no:cacheprovider",
		"node --test":                "node --test --test-reporter=tap",
		"npm test":                   "npm test",
		"go test ./... && echo done": "go test ./... && echo done",
	} {
		if got := structured(in); got != want {
			t.Errorf("structured(%q) = %q, want %q", in, got, want)
		}
	}
}
