package sandbox

import (
	"errors"
	"strings"
	"testing"
)

// TestReadStatus: the parent reads the init's one status record as the
// protocol in init_linux.go says — started, a probe report, or an error
// of its kind; a bare EOF or a record that says none of these is a set-up
// failure, never a started command. A started command's record may be
// followed by one saying it exited, and by nothing else.
func TestReadStatus(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, record string
		want         error // nil: the command started (or the probe answered)
	}{
		{"started", `{"started":true}` + "\n", nil},
		{"probe", `{"probe":{"layers":[]}}`, nil},
		{"bare EOF", "", errNoStart},
		{"blank", " \n", errNoStart},
		{"empty record", `{}`, ErrSetup},
		{"not json", `started`, ErrSetup},
		{"set-up error", `{"error":"mount /proc: EPERM","kind":"setup"}`, ErrSetup},
		{"not found", `{"error":"frob","kind":"notfound"}`, ErrCommandNotFound},
		{"not executable", `{"error":"frob","kind":"notexec"}`, ErrCommandNotExecutable},
		{"namespaces refused", `{"error":"mount: EACCES","kind":"ns"}`, errNamespacesRefused},
		{"started, then exited", `{"started":true}` + "\n" + `{"exited":true}` + "\n", nil},
		{"exited alone", `{"exited":true}`, ErrSetup},
		{"exited first", `{"exited":true}` + "\n" + `{"started":true}`, ErrSetup},
		{"exited twice", `{"started":true}{"exited":true}{"exited":true}`, ErrSetup},
		{"started twice", `{"started":true}{"started":true}`, ErrSetup},
		{"error, then exited", `{"error":"x","kind":"setup"}{"exited":true}`, ErrSetup},
		{"probe, then exited", `{"probe":{"layers":[]}}{"exited":true}`, ErrSetup},
		{"started, then junk", `{"started":true} exited`, ErrSetup},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st, err := readStatus(strings.NewReader(tc.record))
			if err == nil && st.Error != "" {
				err = st.err()
			}
			switch {
			case tc.want == nil && err == nil && strings.Contains(tc.record, "exited") != st.Exited:
				t.Errorf("readStatus(%q): Exited %v", tc.record, st.Exited)
			case tc.want == nil && err != nil:
				t.Errorf("readStatus(%q): %v, want a started command", tc.record, err)
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Errorf("readStatus(%q): %v, want %v", tc.record, err, tc.want)
			}
		})
	}
}
