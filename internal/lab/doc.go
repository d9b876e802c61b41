// Package lab is forkbomb's store of tasks and policies: TOML files under
// $FORKBOMB_HOME/lab/, read strictly (an unknown key or a bad value is
// refused with its file, line and key), written atomically under a lock,
// and named by ids that pass home.ValidateID.
//
// A Policy is a view of sandbox.Policy that a person writes; Tiers says,
// for each of its fields, how strongly this machine's backend holds it
// (the same words as docs/SECURITY.md, which a test keeps in step).
package lab
