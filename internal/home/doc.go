// Package home is the one place that knows where forkbomb keeps its state
// on disk: the layout of $FORKBOMB_HOME (default ~/.forkbomb), the one
// check every id that becomes a path passes, and the refusal of state kept
// inside the repository it is about.
//
// Layout:
//
//	$FORKBOMB_HOME/workspaces/   pid 1 snapshots and their forks (internal/workspace)
//	$FORKBOMB_HOME/runs/<id>/    one folder per run (internal/record)
//	$FORKBOMB_HOME/judge/        the judge's baseline cache
//	$FORKBOMB_HOME/worlds/       virtual shell worlds
//	$FORKBOMB_HOME/lab/          stored tasks, evaluators and policies
//	$FORKBOMB_HOME/canary.json   the last canary report
//
// Other packages take the paths they need (a store root, a runs dir, a
// cache dir) in their Options; only the CLI asks this package for them, so
// a test or a later hosted backend can put each anywhere.
package home
