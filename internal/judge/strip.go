package judge

import (
	"path"
	"strings"
)

// DefaultStripPatterns name the files whose edits a patch may not make:
// tests, test data, test and build configuration, dependency manifests and
// CI. A pattern without a slash matches a file or folder name anywhere; one
// ending in "/" matches a folder and everything below it; one with a slash
// matches the path from the root. Shell-style wildcards apply.
var DefaultStripPatterns = []string{
	"*_test.go", "*.test.*", "*.spec.*", "test_*.py", "*_test.py",
	"test/", "tests/", "__tests__/", "testdata/",
	"conftest.py", "pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml", "noxfile.py", ".coveragerc",
	"package.json", "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", ".npmrc",
	"go.mod", "go.sum", "Cargo.toml", "Cargo.lock", "requirements*.txt", "Pipfile", "Pipfile.lock", "poetry.lock",
	"jest.config.*", "vitest.config.*", "karma.conf.*", ".mocharc*", "mocha.opts", ".babelrc*", "babel.config.*", "tsconfig*.json",
	"Makefile", "GNUmakefile", "makefile", "*.mk", "CMakeLists.txt", "build.gradle*", "pom.xml",
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
			if r == p {
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
		if matchPattern(pat, p) {
			return true
		}
	}
	return false
}

func matchPattern(pat, p string) bool {
	parts := strings.Split(p, "/")
	switch {
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

// strip removes from a patch every file section touching a stripped path
// (either side of a rename). Test files the patch adds count as edits.
func strip(patch []byte, o StripOptions) (kept []byte, stripped []string) {
	pats := o.patterns()
	var keep []filePatch
	for _, f := range splitPatch(patch) {
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
	}
	return joinPatch(keep), stripped
}
