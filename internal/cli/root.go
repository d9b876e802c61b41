package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newRootCmd(stdio IO, b build) *cobra.Command {
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
	root.AddCommand(newSandboxCmd(stdio, b), newCanaryCmd(stdio), newWorkspaceCmd(stdio), newJudgeCmd(stdio),
		newRunCmd(stdio, b), newRunsCmd(stdio), newShowCmd(stdio), newApplyCmd(stdio), newDemoCmd(stdio),
		newUICmd(stdio), newExportCmd(stdio), newPolicyCmd(stdio), newTaskCmd(stdio),
		newBisectCmd(stdio), newMutantsCmd(stdio), newEvalCmd(stdio))
	root.AddCommand(newWorldCmd(Kit{IO: stdio}, b))
	addSubVerbs(root, stdio, b.Verbs, fullVerbs, b.handoff)
	documentExits(root)
	return root
}
