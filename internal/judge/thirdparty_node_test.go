package judge_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/testutil"
)

// qsRepo commits qs 6.13.0 as published, with its tape suite (736
// assertions, under a second) and everything the suite needs committed in
// node_modules/, installed by `npm ci` from testdata/thirdparty/qs. Its
// decoder is broken: `+` is no longer a space.
func qsRepo(t *testing.T) (repo, fixed string) {
	t.Helper()
	testutil.Need(t, "node")
	testutil.Need(t, "npm")
	inst := t.TempDir()
	for _, f := range []string{"package.json", "package-lock.json"} {
		writeFiles(t, inst, map[string]string{f: thirdpartyFile(t, "qs/"+f)})
	}
	// --prefer-offline: after the first install the npm cache serves it all
	out, err := runClient(inst, []string{"NPM_CONFIG_UPDATE_NOTIFIER=false"}, "npm", "ci",
		"--prefer-offline", "--ignore-scripts", "--no-audit", "--no-fund")
	if err != nil {
		testutil.SkipOrFail(t, "npm ci of qs and tape failed (npm registry unreachable and not in the npm cache?): %v\n%s", err, out)
	}
	repo = filepath.Join(t.TempDir(), "qs")
	mods := filepath.Join(inst, "node_modules")
	copyTree(t, filepath.Join(mods, "qs"), repo, nil)
	copyTree(t, mods, filepath.Join(repo, "node_modules"), func(rel string) bool {
		return rel == "qs" || rel == ".package-lock.json"
	})
	fixed, _ = breakFile(t, repo, "lib/utils.js", "var strWithoutPlus = str.replace(/\\+/g, ' ');", "var strWithoutPlus = str;")
	return commitTree(t, repo), fixed
}

// TestJudgeThirdPartyNode: qs's own tape suite, its runner committed in
// node_modules/, against patches to the runner and code under test that
// talks tape round.
func TestJudgeThirdPartyNode(t *testing.T) {
	t.Parallel()
	repo, fixed := qsRepo(t)
	read := func(rel string) string {
		b, err := os.ReadFile(filepath.Join(repo, rel))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	index := read("lib/index.js")
	tapeTest := read("node_modules/tape/lib/test.js")
	const okLine = "var actualOK = !!ok || !!extra.skip;"
	if !strings.Contains(tapeTest, okLine) {
		t.Fatalf("tape's lib/test.js has no %q: has the pinned version changed?", okLine)
	}
	judgeAll(t, repo, "node node_modules/tape/bin/tape 'test/**/*.js'", nil, withPatches(t, repo, []judged{
		{name: "honest fix", pass: true, edits: map[string]edit{"lib/utils.js": {content: fixed}}},
		{name: "edits the committed runner: tape's _assert passes everything", reason: "node_modules/tape/lib/test.js", edits: map[string]edit{
			"node_modules/tape/lib/test.js": {content: strings.Replace(tapeTest, okLine, "var actualOK = true;", 1)},
		}},
		{name: "edits the runner the command names", reason: "node_modules/tape/bin/tape", edits: map[string]edit{
			"node_modules/tape/bin/tape": {content: "#!/usr/bin/env node\nconsole.log('TAP version 13\\n1..736\\n# tests 736\\n# pass  736\\n\\n# ok');\n"},
		}},
		{name: "the code under test patches tape at import", reason: "tampering", fools: true, edits: map[string]edit{
			"lib/index.js": {content: index + thirdpartyFile(t, "qs/patch_tape.js")},
		}},
		{name: "the code under test reruns the suite and rewrites not ok to ok, exit 0", reason: "tampering", fools: true, edits: map[string]edit{
			"lib/index.js": {content: index + thirdpartyFile(t, "qs/rewrite.js")},
		}},
	}), nil)
}
