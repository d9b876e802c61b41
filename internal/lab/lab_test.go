package lab

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/BurntSushi/toml"
)

func TestPolicyRoundTrip(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		p    Policy
	}{
		{"default", Policy{}},
		{"everything", Policy{Network: "allow:api.github.com,proxy.golang.org", Readable: []string{"/srv/data"}, Writable: []string{"/srv/out"}, Env: []string{"GOFLAGS"}, AllowedPrograms: []string{"/usr/bin"}, DeniedPrograms: []string{"/usr/bin/curl"}, Memory: "4G", Pids: 512, CPUs: 1.5, Timeout: "10m", MaxOutput: "1M", Toolchains: true}},
		{"host", Policy{Network: "host", Memory: "none"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			if err := toml.NewEncoder(&buf).Encode(tc.p); err != nil {
				t.Fatal(err)
			}
			got, err := ParsePolicy("p.toml", buf.Bytes())
			if err != nil {
				t.Fatalf("parse %s: %v", buf.String(), err)
			}
			if !reflect.DeepEqual(*got, tc.p) {
				t.Fatalf("round trip:\n got %+v\nwant %+v", *got, tc.p)
			}
		})
	}
}

func TestTaskRoundTrip(t *testing.T) {
	t.Parallel()
	want := Task{Repo: "/srv/repo", Rev: "main", Prompt: "fix the failing test\nin parse.go", Test: "go test ./...", Hidden: []string{"/srv/hidden"}, Engine: "command", Agent: "./agent", Model: "m", Forks: 3, Policy: "strict"}
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(want); err != nil {
		t.Fatal(err)
	}
	got, err := ParseTask("t.toml", buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*got, want) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", *got, want)
	}
}

// TestParseRefusals: each refusal names the file, the line and the key.
func TestParseRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, src string
		task      bool
		line      int
		key       string
	}{
		{"unknown key", "memory = \"1G\"\n\nnetwrok = \"none\"\n", false, 3, "netwrok"},
		{"unknown table", "pids = 3\n[limits]\nmemory = \"1G\"\n", false, 2, "limits"},
		{"bad network", "# strict\nnetwork = \"internet\"\n", false, 2, "network"},
		{"allow with host", "network = \"allow:host\"\n", false, 1, "network"},
		{"bad size", "\n\nmemory = \"lots\"\n", false, 3, "memory"},
		{"bad duration", "timeout = \"ten minutes\"\n", false, 1, "timeout"},
		{"negative pids", "pids = -1\n", false, 1, "pids"},
		{"relative path", "writable = [\"out\"]\n", false, 1, "writable"},
		{"relative program", "\ndenied_programs = [\"curl\"]\n", false, 2, "denied_programs"},
		{"wrong type", "pids = \"many\"\n", false, 1, "pids"},
		{"syntax", "network = \"none\n", false, 1, ""},
		{"task without test", "prompt = \"fix\"\n", true, 0, "test"},
		{"task bad policy id", "prompt = \"x\"\ntest = \"true\"\npolicy = \"bad id!\"\n", true, 3, "policy"},
		{"task unknown key", "prompt = \"x\"\ntest = \"true\"\nengines = 2\n", true, 3, "engines"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var err error
			if tc.task {
				_, err = ParseTask("x.toml", []byte(tc.src))
			} else {
				_, err = ParsePolicy("x.toml", []byte(tc.src))
			}
			var fe *FileError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want a FileError", err)
			}
			if fe.File != "x.toml" || fe.Line != tc.line || (tc.key != "" && fe.Key != tc.key) {
				t.Fatalf("got file %q line %d key %q (%v), want x.toml line %d key %q", fe.File, fe.Line, fe.Key, err, tc.line, tc.key)
			}
			t.Log(err)
		})
	}
}
