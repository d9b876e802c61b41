package judge

import (
	"bytes"
	"context"
	"path"
	"strings"
)

// DefaultStripPatterns name the files whose edits a patch may not make:
// tests and test data; every file a test runner reads as configuration or
// loads as code before or around the tests (its config files, plugins,
// the runner's own modules a repository file could shadow, committed
// dependencies, interpreter and toolchain pins); build files and CI.
// docs/JUDGE.md explains each group. A pattern without a slash matches a
// file or folder name anywhere; one ending in "/" matches a folder and
// everything below it; one with a slash matches the path from the root,
// and one starting with "**/" matches that path below any folder.
// Shell-style wildcards apply; letter case is ignored (a case-insensitive
// file system opens "Conftest.py" as "conftest.py").
var DefaultStripPatterns = []string{
	// tests, their data, snapshots and mocks
	"*_test.go", "*.test.*", "*.spec.*", "*_test.*", "*-test.*", "*_spec.*", "*-spec.*",
	"test_*.py", "test-*.*", "tests.py", "test.js", "test.cjs", "test.mjs",
	"test/", "tests/", "spec/", "__tests__/", "testdata/", "__snapshots__/", "*.snap", "__mocks__/", "cypress/",

	// the tests' own infrastructure: fixtures, harnesses, test helpers and
	// end-to-end suites, by the folder names that say so (a "testing/"
	// folder is often public API — numpy.testing, Go's testing — and is
	// left to the test-only analysis of imports, testonly.go)
	"fixtures/", "fixture/", "__fixtures__/", "test-fixtures/", "harness/", "e2e/",
	"testutil/", "testutils/", "test_utils/", "test-utils/", "testhelpers/", "test_helpers/", "test-helpers/",

	// Python: pytest's configuration and plugins, what site and import
	// machinery load by themselves, compiled modules, and the runner's
	// modules under names that would shadow them on sys.path
	"conftest.py", "pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml", "tox.ini", "setup.cfg", "setup.py",
	"pyproject.toml", "noxfile.py", ".coveragerc", ".pytest_cache/",
	"sitecustomize.py", "usercustomize.py", "*.pth", "*.dist-info/", "*.egg-info/", "*.egg-link", "*.egg",
	"site-packages/", "dist-packages/", "__pycache__/", "*.pyc", "*.pyo", "*.so", "*.pyd",
	"pytest.py", "pytest/", "_pytest.py", "_pytest/", "pluggy.py", "pluggy/", "iniconfig.py", "iniconfig/",
	"py.py", "**/py/__init__.py", "unittest.py", "unittest/",
	"/packaging/__init__.py", "/attr/__init__.py", "/attrs/__init__.py", "/exceptiongroup/", "/tomli/", "/colorama/",
	"requirements*.txt", "Pipfile", "Pipfile.lock", "poetry.lock", "uv.lock", "pdm.lock",

	// Node: manifests, package managers' configuration and loaders,
	// committed dependencies, runners', transpilers' and coverage configs
	"package.json", "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "bun.lock", "bun.lockb",
	".npmrc", ".yarnrc*", ".yarn/", ".pnp.*", ".pnpmfile.cjs", "pnpm-workspace.yaml", "bunfig.toml", "deno.json", "deno.jsonc", "deno.lock",
	"node_modules/", "node.config.json",
	"jest.config.*", "jest.setup.*", "setupTests.*", "vitest.config.*", "vitest.workspace.*", "vitest.setup.*", "vite.config.*",
	"karma.conf.*", ".mocharc*", "mocha.opts", "ava.config.*", ".taprc", ".c8rc*", ".nycrc*", "nyc.config.*",
	"playwright.config.*", "cypress.config.*", "jasmine.json",
	".babelrc*", "babel.config.*", ".swcrc", "tsconfig*.json", "jsconfig*.json",

	// Go: modules, workspaces, vendored dependencies
	"go.mod", "go.sum", "go.work", "go.work.sum", "vendor/",

	// Rust, Ruby, PHP, JVM
	"Cargo.toml", "Cargo.lock", ".cargo/", "build.rs", "rust-toolchain", "rust-toolchain.toml",
	"Gemfile", "Gemfile.lock", ".rspec", "phpunit.xml*", "composer.json", "composer.lock",
	"build.gradle*", "settings.gradle*", "gradle.properties", "gradle/", "gradlew", "gradlew.bat", "pom.xml", ".mvn/", "mvnw", "mvnw.cmd",

	// which interpreter or toolchain a version manager picks
	".python-version", ".node-version", ".nvmrc", ".tool-versions", ".ruby-version", ".java-version", ".sdkmanrc", "mise.toml", ".mise.toml",

	// build files, CI, git
	"Makefile", "GNUmakefile", "makefile", "*.mk", "CMakeLists.txt",
	".github/", ".gitlab-ci.yml", ".circleci/", ".ci/", ".travis.yml", "azure-pipelines.yml", "Jenkinsfile",
	".gitattributes", ".gitmodules",
}

// StripOptions adjust what is stripped.
type StripOptions struct {
	Add    []string // more patterns
	Remove []string // default patterns not to apply
	Named  []string // paths the test command names (always stripped)
}

func (o StripOptions) patterns() []string {
	var out []string
	for _, p := range DefaultStripPatterns {
		keep := true
		for _, r := range o.Remove {
			if strings.EqualFold(r, p) { // matching ignores case, so --keep does too
				keep = false
			}
		}
		if keep {
			out = append(out, p)
		}
	}
	return append(out, o.Add...)
}

// isStripped reports whether path matches a pattern or is named.
func (o StripOptions) isStripped(p string, patterns []string) bool {
	for _, n := range o.Named {
		if p == n {
			return true
		}
	}
	for _, pat := range patterns {
		if matchPattern(pat, p) || matchPattern(strings.ToLower(pat), strings.ToLower(p)) {
			return true
		}
	}
	return false
}

func matchPattern(pat, p string) bool {
	parts := strings.Split(p, "/")
	switch {
	case strings.HasPrefix(pat, "**/"):
		rest := strings.TrimPrefix(pat, "**/")
		for i := range parts {
			if matchPattern(rest, strings.Join(parts[i:], "/")) {
				return true
			}
		}
	case strings.HasPrefix(pat, "/"):
		rest := pat[1:]
		if dir, ok := strings.CutSuffix(rest, "/"); ok {
			ok, _ := path.Match(dir, parts[0])
			return ok && len(parts) > 1
		}
		ok, _ := path.Match(rest, p)
		return ok
	case strings.HasSuffix(pat, "/"):
		dir := strings.TrimSuffix(pat, "/")
		if strings.Contains(dir, "/") {
			return strings.HasPrefix(p, dir+"/")
		}
		for _, c := range parts[:len(parts)-1] {
			if ok, _ := path.Match(dir, c); ok {
				return true
			}
		}
	case strings.Contains(pat, "/"):
		ok, _ := path.Match(pat, p)
		return ok
	default:
		ok, _ := path.Match(pat, parts[len(parts)-1])
		return ok
	}
	return false
}

// strip parses a patch, checks the parse against git's own reading, and
// removes every file section touching a stripped path (either side of a
// rename or copy). Test files the patch adds count as edits. A patch with
// text the judge cannot attribute to a file section is refused whole
// (ErrUnattributed); the text kept is re-checked with git as it will be
// applied. Other errors are the judge's own (ErrCannotJudge).
func strip(ctx context.Context, patch []byte, o StripOptions) (kept []byte, stripped []string, err error) {
	files, err := parsePatch(patch)
	if err != nil {
		return nil, nil, err
	}
	if err := gitCheck(ctx, patch, files); err != nil {
		return nil, nil, err
	}
	pats := o.patterns()
	var keep []filePatch
	for _, f := range files {
		hit := false
		for _, p := range f.paths() {
			if o.isStripped(p, pats) {
				hit = true
			}
		}
		if hit {
			stripped = append(stripped, strings.Join(f.paths(), " -> "))
			continue
		}
		keep = append(keep, f)
		kept = append(kept, f.text...)
	}
	// What is kept is read by git again, unless it is the very text just
	// read (nothing stripped, nothing around the sections): the same bytes
	// give the same reading, and two git runs are saved on every judged
	// patch.
	if !bytes.Equal(kept, patch) {
		if err := gitCheck(ctx, kept, keep); err != nil {
			return nil, stripped, err
		}
	}
	return kept, stripped, nil
}
