package cli

import (
	"os/exec"
	"strings"

	"github.com/spf13/pflag"
)

func addProgramFlags(f *pflag.FlagSet, o *sandboxOptions) {
	f.StringArrayVar(&o.allowProgs, "allow-program", nil, "only these files or folders may be executed, by any process of the command; a bare name is looked up in PATH (repeatable)")
	f.StringArrayVar(&o.denyProgs, "deny-program", nil, "this file or folder may not be executed, even when allowed (repeatable)")
	f.StringVar(&o.policyRef, "policy", "", "a stored policy's id or a policy .toml file ('forkbomb policy --help'); flags given here win, lists are joined")
}

// programs resolves the --allow-program and --deny-program values: a bare
// name is the file PATH finds now, on the caller's side (the sandbox then
// checks the canonical file; what PATH says inside it does not matter).
func (o *sandboxOptions) programs() (allow, deny []string, err error) {
	look := func(flag string, in []string) ([]string, error) {
		var out []string
		for _, v := range in {
			if v != "" && !strings.Contains(v, "/") {
				p, err := exec.LookPath(v)
				if err != nil {
					return nil, &exitError{code: ExitSetup, msg: flag + " " + v + ": not found in PATH", err: err}
				}
				v = p
			}
			out = append(out, v)
		}
		return out, nil
	}
	if allow, err = look("--allow-program", o.allowProgs); err != nil {
		return nil, nil, err
	}
	deny, err = look("--deny-program", o.denyProgs)
	return allow, deny, err
}
