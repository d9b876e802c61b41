package cli

import (
	"fmt"
	"sync"

	"github.com/spf13/cobra"
)

// newRootCmd makes the command tree for the command line args: when its
// first word names a verb, that verb alone (each verb's flags and help are
// its own; building all of them is a tenth of a start's CPU), else all.
func newRootCmd(stdio IO, b build, args []string) *cobra.Command {
	root := &cobra.Command{
		Use:   "forkbomb",
		Short: "Race untrusted AI agents in kernel-confined forks of a repository",
		Long: `forkbomb hands one coding task to several AI agents at once without trusting
any of them: each works in its own fork of the repository, confined by the
Linux kernel, and is judged only by the patch it would ship.

Start with:
  forkbomb sandbox --probe        what confinement this machine offers
  forkbomb sandbox -- COMMAND     run one command confined

Every verb exits 130 when interrupted (Ctrl-C, SIGTERM); each verb's --help
gives its other exit statuses.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(stdio.In)
	root.SetOut(stdio.Out)
	root.SetErr(stdio.Err)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%w: %v (see '%s --help')", errUsage, err, c.CommandPath())
	})
	verbs := []struct {
		name string
		make func() *cobra.Command
	}{
		{"sandbox", func() *cobra.Command { return newSandboxCmd(stdio, b) }},
		{"canary", func() *cobra.Command { return newCanaryCmd(stdio, b) }},
		{"workspace", func() *cobra.Command { return newWorkspaceCmd(stdio) }},
		{"judge", func() *cobra.Command { return newJudgeCmd(stdio) }},
		{"run", func() *cobra.Command { return newRunCmd(stdio, b) }},
		{"runs", func() *cobra.Command { return newRunsCmd(stdio) }},
		{"show", func() *cobra.Command { return newShowCmd(stdio) }},
		{"apply", func() *cobra.Command { return newApplyCmd(stdio) }},
		{"demo", func() *cobra.Command { return newDemoCmd(stdio) }},
		{"ui", func() *cobra.Command { return newUICmd(stdio) }},
		{"export", func() *cobra.Command { return newExportCmd(stdio) }},
		{"policy", func() *cobra.Command { return newPolicyCmd(stdio) }},
		{"task", func() *cobra.Command { return newTaskCmd(stdio) }},
		{"bisect", func() *cobra.Command { return newBisectCmd(stdio) }},
		{"mutants", func() *cobra.Command { return newMutantsCmd(stdio) }},
		{"eval", func() *cobra.Command { return newEvalCmd(stdio) }},
		{"world", func() *cobra.Command { return newWorldCmd(Kit{IO: stdio}, b) }},
	}
	// The verbs' exit statuses are written into their help when help is
	// shown, not at every start (a tenth of a world fork's CPU went to it).
	help := root.HelpFunc()
	var once sync.Once
	root.SetHelpFunc(func(c *cobra.Command, args []string) {
		once.Do(func() { documentExits(root) })
		help(c, args)
	})
	for _, v := range verbs {
		if len(args) > 0 && args[0] == v.name {
			root.AddCommand(v.make())
			return root
		}
	}
	for _, v := range verbs {
		root.AddCommand(v.make())
	}
	addSubVerbs(root, stdio, b.Verbs, fullVerbs, b.handoff)
	return root
}
