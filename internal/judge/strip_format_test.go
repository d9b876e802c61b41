package judge

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

// The sections the attacks below are built from.
const (
	srcSection = "diff --git a/src/x.go b/src/x.go\nindex 1111111..2222222 100644\n--- a/src/x.go\n+++ b/src/x.go\n@@ -1 +1 @@\n-a\n+b\n"
	// a plain unified diff of a test file, with no "diff --git" line:
	// git apply reads it wherever it is
	plainTestDiff = "--- a/src/x_test.go\n+++ b/src/x_test.go\n@@ -1 +1 @@\n-a\n+b\n"
	binTest       = "diff --git a/tests/b.bin b/tests/b.bin\nindex 87ae6b695deceaf160611414f7dcd5c7366b2e79..22f6b3b038c9c8f81e86f801c481bbf851e477fe 100644\nGIT binary patch\nliteral 8\nPcmYew%wtF_sx$%s42c4`\n\nliteral 7\nOcmYew%wtF_sssQD(E^45\n\n"
)

// TestStripPatchFormats: every patch form git apply reads either comes
// out with the test edit stripped, or is refused whole as text the judge
// could not attribute to a file; never is a test edit applied with
// "stripped: []". The positive controls are the same edits in the form
// git diff prints them, which must be read, and stripped, by path.
func TestStripPatchFormats(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		patch    string
		refused  bool
		stripped []string // when not refused
		kept     []string // paths that must stay
	}{
		// positive controls
		{name: "control: a test edit in its own section", patch: srcSection + strings.ReplaceAll(srcSection, "src/x.go", "src/x_test.go"),
			stripped: []string{"src/x_test.go"}, kept: []string{"src/x.go"}},
		{name: "control: a mail's commit message and diffstat before the first section", patch: "From 0000 Mon Sep 17 00:00:00 2001\nSubject: [PATCH] fix\n\nbody text\n---\n src/x.go | 2 +-\n 1 file changed\n\n" + srcSection + "-- \n2.39.5\n\n",
			kept: []string{"src/x.go"}},
		{name: "control: CRLF inside the content of an honest hunk", patch: "diff --git a/src/w.txt b/src/w.txt\n--- a/src/w.txt\n+++ b/src/w.txt\n@@ -1 +1 @@\n-a\r\n+b\r\n",
			kept: []string{"src/w.txt"}},
		{name: "control: a hunk whose content looks like headers", patch: "diff --git a/src/x.go b/src/x.go\n--- a/src/x.go\n+++ b/src/x.go\n@@ -1,2 +1,3 @@\n--- a/tests/t.py\n-+++ b/tests/t.py\n+diff --git a/tests/t.py b/tests/t.py\n+@@ -1 +1 @@\n+--- x\n",
			kept: []string{"src/x.go"}},
		{name: "control: no newline at end of file", patch: "diff --git a/src/x.go b/src/x.go\n--- a/src/x.go\n+++ b/src/x.go\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file\n" + srcSection,
			kept: []string{"src/x.go", "src/x.go"}},

		// the bypass and its relatives
		{name: "a plain unified diff appended after a git section", patch: srcSection + plainTestDiff, refused: true},
		{name: "a plain unified diff alone", patch: plainTestDiff, refused: true},
		{name: "a section hidden in a commit message", patch: "Subject: fix\n\n" + plainTestDiff + "\n" + srcSection, refused: true},
		{name: "a git section hidden in a commit message is the first section", patch: "Subject: fix\n\n" + strings.ReplaceAll(srcSection, "src/x.go", "src/x_test.go") + srcSection,
			stripped: []string{"src/x_test.go"}, kept: []string{"src/x.go"}},
		{name: "text after the last section", patch: srcSection + "\nhello\n" + plainTestDiff, refused: true},
		{name: "a signature followed by a diff", patch: srcSection + "-- \n" + plainTestDiff, refused: true},
		{name: "a hunk shorter than its counts", patch: "diff --git a/src/x.go b/src/x.go\n--- a/src/x.go\n+++ b/src/x.go\n@@ -1,3 +1,3 @@\n-a\n+b\n" + plainTestDiff, refused: true},
		{name: "a hunk longer than its counts", patch: srcSection + "+c\n", refused: true},

		// names: the "diff --git" line and the other header lines disagree
		{name: "diff --git names a source file, ---/+++ a test file", patch: "diff --git a/src/x.go b/src/x.go\n--- a/src/x_test.go\n+++ b/src/x_test.go\n@@ -1 +1 @@\n-a\n+b\n", refused: true},
		{name: "diff --git names a test file, ---/+++ a source file", patch: "diff --git a/tests/t.py b/tests/t.py\n--- a/src.py\n+++ b/src.py\n@@ -1 +1 @@\n-a\n+b\n", refused: true},
		{name: "--- and +++ differ", patch: "diff --git a/src/x.go b/src/x.go\n--- a/src/x.go\n+++ b/src/x_test.go\n@@ -1 +1 @@\n-a\n+b\n", refused: true},
		{name: "diff --git halves differ without a rename", patch: "diff --git a/src/x.go b/src/x_test.go\n--- a/src/x.go\n+++ b/src/x.go\n@@ -1 +1 @@\n-a\n+b\n", refused: true},
		{name: "a prefix other than a/ b/ is stripped as git does", patch: "diff --git x/conftest.py y/conftest.py\n--- x/conftest.py\n+++ y/conftest.py\n@@ -1 +1 @@\n-a\n+b\n",
			stripped: []string{"conftest.py"}},
		{name: "a doubled slash git would squash", patch: "diff --git a/tests//t.py b/tests//t.py\n--- a/tests//t.py\n+++ b/tests//t.py\n@@ -1 +1 @@\n-a\n+b\n", refused: true},
		{name: "a dot-dot component", patch: "diff --git a/src/../tests/t.py b/src/../tests/t.py\n--- a/src/../tests/t.py\n+++ b/src/../tests/t.py\n@@ -1 +1 @@\n-a\n+b\n", refused: true},
		{name: "an unknown header line before ---", patch: "diff --git a/src/x.go b/src/x.go\nhello\n--- a/src/x_test.go\n+++ b/src/x_test.go\n@@ -1 +1 @@\n-a\n+b\n", refused: true},
		{name: "a header line repeated", patch: "diff --git a/src/x.go b/src/x.go\nindex 1111111..2222222 100644\nindex 1111111..2222222 100644\n--- a/src/x.go\n+++ b/src/x.go\n@@ -1 +1 @@\n-a\n+b\n", refused: true},

		// renames and copies: both sides go through the rules
		{name: "a rename into a test path", patch: "diff --git a/src/a.py b/tests/test_a.py\nsimilarity index 100%\nrename from src/a.py\nrename to tests/test_a.py\n",
			stripped: []string{"src/a.py -> tests/test_a.py"}},
		{name: "a rename out of a test path", patch: "diff --git a/tests/test_a.py b/src/a.py\nsimilarity index 100%\nrename from tests/test_a.py\nrename to src/a.py\n",
			stripped: []string{"tests/test_a.py -> src/a.py"}},
		{name: "a copy into a test path, with an edit", patch: "diff --git a/src/a.py b/tests/test_a.py\nsimilarity index 90%\ncopy from src/a.py\ncopy to tests/test_a.py\nindex 1111111..2222222 100644\n--- a/src/a.py\n+++ b/tests/test_a.py\n@@ -1 +1 @@\n-a\n+b\n",
			stripped: []string{"src/a.py -> tests/test_a.py"}},
		{name: "a rename whose diff --git line names other paths", patch: "diff --git a/src/a.py b/src/b.py\nsimilarity index 100%\nrename from src/a.py\nrename to tests/test_a.py\n", refused: true},
		{name: "a rename and a copy in one section", patch: "diff --git a/src/a.py b/tests/t.py\nrename from src/a.py\ncopy to tests/t.py\n", refused: true},
		{name: "git's legacy rename old/new lines", patch: "diff --git a/src/a.py b/src/b.py\nrename old src/a.py\nrename new tests/t.py\n", refused: true},

		// odd names, quoted as git quotes them
		{name: "a quoted name with CR", patch: "diff --git \"a/tests/t\\r.py\" \"b/tests/t\\r.py\"\nnew file mode 100644\n--- /dev/null\n+++ \"b/tests/t\\r.py\"\n@@ -0,0 +1 @@\n+x\n",
			stripped: []string{"tests/t\r.py"}},
		{name: "a quoted name with tab and newline", patch: "diff --git \"a/src/a\\tb\\nc\" \"b/src/a\\tb\\nc\"\nnew file mode 100644\n--- /dev/null\n+++ \"b/src/a\\tb\\nc\"\n@@ -0,0 +1 @@\n+x\n",
			kept: []string{"src/a\tb\nc"}},
		{name: "a quoted name with invalid UTF-8", patch: "diff --git \"a/tests/\\377.py\" \"b/tests/\\377.py\"\nnew file mode 100644\n--- /dev/null\n+++ \"b/tests/\\377.py\"\n@@ -0,0 +1 @@\n+x\n",
			stripped: []string{"tests/\xff.py"}},
		{name: "invalid UTF-8 inside quotes is kept as bytes", patch: "diff --git \"a/conf\xfftest\\t.py\" \"b/conf\xfftest\\t.py\"\nnew file mode 100644\n--- /dev/null\n+++ \"b/conf\xfftest\\t.py\"\n@@ -0,0 +1 @@\n+x\n",
			kept: []string{"conf\xfftest\t.py"}},
		{name: "an unquoted raw CR in a name", patch: "diff --git a/conftest.py\r b/conftest.py\r\nnew file mode 100644\n--- /dev/null\n+++ b/conftest.py\r\n@@ -0,0 +1 @@\n+x\n", refused: true},
		{name: "a name with a space, as git prints it", patch: "diff --git a/a b/c/Makefile b/a b/c/Makefile\n--- a/a b/c/Makefile\t\n+++ b/a b/c/Makefile\t\n@@ -1 +1 @@\n-x\n+y\n",
			stripped: []string{"a b/c/Makefile"}},
		{name: "an unquoted name with spaces and no ---/+++ is read as git reads it", patch: "diff --git a/x b/y b/x b/y\nold mode 100644\nnew mode 100755\n",
			kept: []string{"x b/y"}},
		{name: "diff --git halves that are no one name, with no ---/+++", patch: "diff --git a/x b/y\nold mode 100644\nnew mode 100755\n", refused: true},
		{name: "a mode change of a test file", patch: "diff --git a/tests/t.sh b/tests/t.sh\nold mode 100644\nnew mode 100755\n",
			stripped: []string{"tests/t.sh"}},

		// binary
		{name: "a binary patch to a test file", patch: srcSection + binTest, stripped: []string{"tests/b.bin"}, kept: []string{"src/x.go"}},
		{name: "a diff smuggled after a binary patch", patch: binTest + plainTestDiff, refused: true},
		{name: "a binary patch with a bad base-85 line", patch: strings.Replace(binTest, "PcmYew%wtF_sx$%s42c4`", "Pcm\"ew%wtF_sx$%s42c4`", 1), refused: true},

		// line endings
		{name: "CRLF line endings throughout", patch: strings.ReplaceAll(srcSection+strings.ReplaceAll(srcSection, "src/x.go", "src/x_test.go"), "\n", "\r\n"), refused: true},

		// /dev/null
		{name: "--- /dev/null without new file mode", patch: "diff --git a/tests/t.py b/tests/t.py\n--- /dev/null\n+++ b/tests/t.py\n@@ -0,0 +1 @@\n+x\n", refused: true},
		{name: "new file mode with a --- name", patch: "diff --git a/src/x.go b/src/x.go\nnew file mode 100644\n--- a/src/x.go\n+++ b/src/x.go\n@@ -0,0 +1 @@\n+x\n", refused: true},
		{name: "+++ /dev/null without deleted file mode", patch: "diff --git a/tests/t.py b/tests/t.py\n--- a/tests/t.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n", refused: true},
		{name: "deleted file mode with a +++ name", patch: "diff --git a/src/x.go b/src/x.go\ndeleted file mode 100644\n--- a/src/x.go\n+++ b/src/x.go\n@@ -1 +0,0 @@\n-x\n", refused: true},
		{name: "a deleted test file", patch: "diff --git a/tests/t.py b/tests/t.py\ndeleted file mode 100644\n--- a/tests/t.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n",
			stripped: []string{"tests/t.py"}},
		{name: "a /dev/null with a prefix", patch: "diff --git a/dev/null b/dev/null\n--- a//dev/null\n+++ b//dev/null\n@@ -1 +1 @@\n-a\n+b\n", refused: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			kept, stripped, err := strip(context.Background(), []byte(c.patch), StripOptions{})
			if c.refused {
				if !errors.Is(err, ErrUnattributed) {
					t.Fatalf("not refused: err=%v stripped=%q kept:\n%s", err, stripped, kept)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !slices.Equal(stripped, c.stripped) {
				t.Errorf("stripped %q, want %q", stripped, c.stripped)
			}
			files, err := parsePatch(kept)
			if err != nil {
				t.Fatalf("the kept text does not parse: %v", err)
			}
			var paths []string
			for _, f := range files {
				paths = append(paths, f.paths()...)
			}
			if !slices.Equal(paths, c.kept) {
				t.Errorf("kept %q, want %q", paths, c.kept)
			}
		})
	}
}

// TestGitCheck is the cross-check's own positive control: a parse that
// misses a path git reads, or names one git does not, is refused; the
// right one passes.
func TestGitCheck(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rename := "diff --git a/src/a.py b/tests/t.py\nsimilarity index 100%\nrename from src/a.py\nrename to tests/t.py\n"
	for _, c := range []struct {
		name  string
		text  string
		files []filePatch
		ok    bool
	}{
		{"matching", srcSection + rename, []filePatch{{oldPath: "src/x.go", newPath: "src/x.go"}, {oldPath: "src/a.py", newPath: "tests/t.py"}}, true},
		{"a section git reads and the parse missed", srcSection + plainTestDiff, []filePatch{{oldPath: "src/x.go", newPath: "src/x.go"}}, false},
		{"a rename's old side wrong", rename, []filePatch{{oldPath: "src/b.py", newPath: "tests/t.py"}}, false},
		{"a rename's new side wrong", rename, []filePatch{{oldPath: "src/a.py", newPath: "src/t.py"}}, false},
		{"a path git does not read", srcSection, []filePatch{{oldPath: "src/x.go", newPath: "src/x.go"}, {oldPath: "y", newPath: "y"}}, false},
		{"text git cannot read", "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n", []filePatch{{oldPath: "x", newPath: "x"}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := gitCheck(ctx, []byte(c.text), c.files)
			if c.ok && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !c.ok && !errors.Is(err, ErrUnattributed) {
				t.Fatalf("not refused: %v", err)
			}
		})
	}
}
