package judge

import (
	"testing"
)

// TestStripPatterns: one path per default pattern that must be stripped
// (the test fails if a pattern has no case), and paths that must not be.
func TestStripPatterns(t *testing.T) {
	t.Parallel()
	stripped := map[string][]string{
		"*_test.go": {"pkg/a_test.go"}, "*.test.*": {"src/a.test.js"}, "*.spec.*": {"src/a.spec.ts"},
		"*_test.*": {"lib/a_test.js"}, "*-test.*": {"lib/a-test.mjs"}, "*_spec.*": {"lib/a_spec.rb"}, "*-spec.*": {"lib/a-spec.js"},
		"test_*.py": {"pkg/test_a.py"}, "test-*.*": {"test-sum.js"}, "tests.py": {"app/tests.py"},
		"test.js": {"test.js"}, "test.cjs": {"lib/test.cjs"}, "test.mjs": {"test.mjs"},
		"test/": {"test/a.js"}, "tests/": {"a/tests/b/c.py"}, "spec/": {"spec/support/jasmine.json"}, "__tests__/": {"src/__tests__/a.js"},
		"testdata/": {"x/testdata/in.txt"}, "__snapshots__/": {"src/__snapshots__/a.js.snap"}, "*.snap": {"a.snap"},
		"__mocks__/": {"__mocks__/fs.js"}, "cypress/": {"cypress/e2e/a.cy.js"},
		"fixtures/": {"tests2/fixtures/data.json", "src/fixtures/user.py"}, "fixture/": {"fixture/a.txt"},
		"__fixtures__/": {"src/__fixtures__/a.js"}, "test-fixtures/": {"test-fixtures/x.json"}, "harness/": {"harness/run.go", "pkg/harness/h.py"},
		"e2e/": {"e2e/login.ts"}, "testutil/": {"internal/testutil/skip.go"}, "testutils/": {"pkg/testutils/a.go"},
		"test_utils/": {"lib/test_utils/__init__.py"}, "test-utils/": {"test-utils/index.js"}, "testhelpers/": {"testhelpers/h.go"},
		"test_helpers/": {"test_helpers/a.py"}, "test-helpers/": {"src/test-helpers/a.js"},

		"conftest.py": {"conftest.py", "sub/conftest.py"}, "pytest.ini": {"pytest.ini"}, ".pytest.ini": {".pytest.ini"},
		"pytest.toml": {"pytest.toml"}, ".pytest.toml": {".pytest.toml"}, "tox.ini": {"tox.ini"}, "setup.cfg": {"setup.cfg"},
		"setup.py": {"setup.py"}, "pyproject.toml": {"pyproject.toml"}, "noxfile.py": {"noxfile.py"}, ".coveragerc": {".coveragerc"},
		".pytest_cache/":   {".pytest_cache/v/cache/lastfailed"},
		"sitecustomize.py": {"sitecustomize.py"}, "usercustomize.py": {"lib/usercustomize.py"}, "*.pth": {"evil.pth"},
		"*.dist-info/": {"evil-1.0.dist-info/entry_points.txt"}, "*.egg-info/": {"src/evil.egg-info/entry_points.txt"},
		"*.egg-link": {"evil.egg-link"}, "*.egg": {"evil-1.0-py3.11.egg"}, "site-packages/": {".venv/lib/python3.11/site-packages/x.py"},
		"dist-packages/": {"dist-packages/x.py"}, "__pycache__/": {"pkg/__pycache__/mod.cpython-311.pyc"}, "*.pyc": {"mod.pyc"},
		"*.pyo": {"mod.pyo"}, "*.so": {"_pytest.cpython-311-x86_64-linux-gnu.so"}, "*.pyd": {"pytest.pyd"},
		"pytest.py": {"pytest.py", "src/pytest.py"}, "pytest/": {"pytest/__init__.py"}, "_pytest.py": {"_pytest.py"},
		"_pytest/": {"_pytest/runner.py"}, "pluggy.py": {"pluggy.py"}, "pluggy/": {"pluggy/__init__.py"},
		"iniconfig.py": {"iniconfig.py"}, "iniconfig/": {"iniconfig/__init__.py"}, "py.py": {"py.py"},
		"**/py/__init__.py": {"py/__init__.py", "src/py/__init__.py"}, "unittest.py": {"unittest.py"}, "unittest/": {"tests2/unittest/case.py"},
		"/packaging/__init__.py": {"packaging/__init__.py"}, "/attr/__init__.py": {"attr/__init__.py"}, "/attrs/__init__.py": {"attrs/__init__.py"},
		"/exceptiongroup/": {"exceptiongroup/__init__.py"}, "/tomli/": {"tomli/_parser.py"}, "/colorama/": {"colorama/__init__.py"},
		"requirements*.txt": {"requirements-dev.txt"}, "Pipfile": {"Pipfile"}, "Pipfile.lock": {"Pipfile.lock"}, "poetry.lock": {"poetry.lock"},
		"uv.lock": {"uv.lock"}, "pdm.lock": {"pdm.lock"},

		"package.json": {"package.json"}, "package-lock.json": {"package-lock.json"}, "npm-shrinkwrap.json": {"npm-shrinkwrap.json"},
		"yarn.lock": {"yarn.lock"}, "pnpm-lock.yaml": {"pnpm-lock.yaml"}, "bun.lock": {"bun.lock"}, "bun.lockb": {"bun.lockb"},
		".npmrc": {".npmrc"}, ".yarnrc*": {".yarnrc", ".yarnrc.yml"}, ".yarn/": {".yarn/releases/yarn.cjs"}, ".pnp.*": {".pnp.cjs", ".pnp.loader.mjs"},
		".pnpmfile.cjs": {".pnpmfile.cjs"}, "pnpm-workspace.yaml": {"pnpm-workspace.yaml"}, "bunfig.toml": {"bunfig.toml"},
		"deno.json": {"deno.json"}, "deno.jsonc": {"deno.jsonc"}, "deno.lock": {"deno.lock"},
		"node_modules/": {"node_modules/tape/lib/test.js", "packages/a/node_modules/x/index.js"}, "node.config.json": {"node.config.json"},
		"jest.config.*": {"jest.config.js"}, "jest.setup.*": {"jest.setup.ts"}, "setupTests.*": {"src/setupTests.js"},
		"vitest.config.*": {"vitest.config.mts"}, "vitest.workspace.*": {"vitest.workspace.ts"}, "vitest.setup.*": {"vitest.setup.js"},
		"vite.config.*": {"vite.config.ts"}, "karma.conf.*": {"karma.conf.js"}, ".mocharc*": {".mocharc.yml", ".mocharc.json"},
		"mocha.opts": {"mocha.opts"}, "ava.config.*": {"ava.config.js"}, ".taprc": {".taprc"}, ".c8rc*": {".c8rc.json"},
		".nycrc*": {".nycrc"}, "nyc.config.*": {"nyc.config.js"}, "playwright.config.*": {"playwright.config.ts"},
		"cypress.config.*": {"cypress.config.js"}, "jasmine.json": {"jasmine.json"}, ".babelrc*": {".babelrc", ".babelrc.js"},
		"babel.config.*": {"babel.config.js"}, ".swcrc": {".swcrc"}, "tsconfig*.json": {"tsconfig.json", "tsconfig.build.json"},
		"jsconfig*.json": {"jsconfig.json"},

		"go.mod": {"go.mod"}, "go.sum": {"sub/go.sum"}, "go.work": {"go.work"}, "go.work.sum": {"go.work.sum"},
		"vendor/": {"vendor/modules.txt", "vendor/github.com/x/y/y.go"},

		"Cargo.toml": {"Cargo.toml"}, "Cargo.lock": {"Cargo.lock"}, ".cargo/": {".cargo/config.toml"}, "build.rs": {"build.rs"},
		"rust-toolchain": {"rust-toolchain"}, "rust-toolchain.toml": {"rust-toolchain.toml"}, "Gemfile": {"Gemfile"},
		"Gemfile.lock": {"Gemfile.lock"}, ".rspec": {".rspec"}, "phpunit.xml*": {"phpunit.xml.dist"}, "composer.json": {"composer.json"},
		"composer.lock": {"composer.lock"}, "build.gradle*": {"build.gradle.kts"}, "settings.gradle*": {"settings.gradle"},
		"gradle.properties": {"gradle.properties"}, "gradle/": {"gradle/wrapper/gradle-wrapper.properties"}, "gradlew": {"gradlew"},
		"gradlew.bat": {"gradlew.bat"}, "pom.xml": {"pom.xml"}, ".mvn/": {".mvn/extensions.xml"}, "mvnw": {"mvnw"}, "mvnw.cmd": {"mvnw.cmd"},

		".python-version": {".python-version"}, ".node-version": {".node-version"}, ".nvmrc": {".nvmrc"}, ".tool-versions": {".tool-versions"},
		".ruby-version": {".ruby-version"}, ".java-version": {".java-version"}, ".sdkmanrc": {".sdkmanrc"}, "mise.toml": {"mise.toml"},
		".mise.toml": {".mise.toml"},

		"Makefile": {"Makefile"}, "GNUmakefile": {"GNUmakefile"}, "makefile": {"makefile"}, "*.mk": {"rules.mk"},
		"CMakeLists.txt": {"CMakeLists.txt"}, ".github/": {".github/workflows/ci.yml"}, ".gitlab-ci.yml": {".gitlab-ci.yml"},
		".circleci/": {".circleci/config.yml"}, ".ci/": {".ci/run.sh"}, ".travis.yml": {".travis.yml"},
		"azure-pipelines.yml": {"azure-pipelines.yml"}, "Jenkinsfile": {"Jenkinsfile"}, ".gitattributes": {".gitattributes"},
		".gitmodules": {".gitmodules"},
	}
	for _, p := range DefaultStripPatterns {
		if len(stripped[p]) == 0 {
			t.Errorf("default pattern %q has no case here", p)
		}
	}
	var o StripOptions
	pats := o.patterns()
	for pat, paths := range stripped {
		for _, p := range paths {
			t.Run(pat+"/"+p, func(t *testing.T) {
				if !matchPattern(pat, p) {
					t.Errorf("pattern %q does not match %q", pat, p)
				}
				if !o.isStripped(p, pats) {
					t.Errorf("%q is not stripped", p)
				}
			})
		}
	}
	// letter case: a case-insensitive file system opens these as the
	// stripped names
	for _, p := range []string{"Conftest.py", "TESTS/a.py", "PyTest.ini", "Node_Modules/x.js"} {
		if !o.isStripped(p, pats) {
			t.Errorf("%q is not stripped", p)
		}
	}
	for _, p := range []string{
		"src/x.go", "calc.go", "mathx.py", "src/sum.js", "README.md", "docs/testing.md",
		"third_party/lib/x.c",                          // not loaded by a runner as such: code, judged as code
		"packaging/debian/rules", "mylib/packaging.py", // a common word: only the import-shadowing forms at the root
		"py/src/lib.py", "src/attr/__init__.py", "lib/colorama/x.py",
		"src/latest.go", "contest.py", "src/vendored.go", "pytest_plugin_docs.md",
		"numpy/testing/_private/utils.py", "internal/testing/x.go", // public API as often as not: left to the import analysis
		"fixtures.py", "src/harness.go", "e2e.md", "testutil.go", "lib/test_utils.js",
	} {
		if o.isStripped(p, pats) {
			t.Errorf("%q is stripped", p)
		}
	}
	// --keep removes a default pattern whatever its case
	keep := StripOptions{Remove: []string{"Makefile"}}
	if keep.isStripped("a/Makefile", keep.patterns()) || keep.isStripped("a/makefile", keep.patterns()) {
		t.Errorf("--keep Makefile not honoured")
	}
}
