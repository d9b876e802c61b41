// Package workspace makes the copies of a repository that agents work in.
//
// A pid 1 is a pristine snapshot of one commit of the user's repository,
// made without writing to it, whose git history holds that commit and its
// ancestors only. A fork is an overlayfs upper directory over its source's
// layers, mounted only inside the sandbox that runs a command in it, so a
// fork costs the same for a toy and for a monorepo; where overlayfs is not
// available (macOS) a fork is a reflink copy (clonefile on APFS), or a plain
// copy, and a command in a pid 1 works on such a copy, thrown away after. The patch a fork would
// ship is computed here, on the trusted side, from its upper layers — never
// by running anything inside the fork.
//
// State lives under a root (default $FORKBOMB_HOME/workspaces), never inside
// the repository. Every name that becomes a path passes ValidateName; every
// change to the state happens under a file lock, in a temporary directory
// renamed into place, so a crash leaves nothing half-made that the next
// command does not reclaim.
package workspace
