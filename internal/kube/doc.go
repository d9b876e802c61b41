// Package kube is the Kubernetes fork store: `forkbomb run --backend
// kubernetes`. Each fork's agent runs in a Pod of its own; the race, the
// record and the judge are unchanged, because the store implements the
// same seams as the local one (run.Forks, judge.Forks).
//
// What lives where:
//
//   - The pid 1 and the judge stay on this machine (a *workspace.Store):
//     the judge applies each patch to a fresh local fork of the pid 1, as
//     it does for local races.
//   - A fork is a Pod. Its tree is the pid 1's, sent as a tar stream over
//     the API's exec on the fork's first command; its agent runs there;
//     its patch comes back as text (git diff in the pod, bounded) and is
//     never trusted more than any fork's patch is.
//   - Each command in a pod — the agent's, and forkbomb's own git diff over
//     the fork's tree — runs inside forkbomb's sandbox there: forkbomb's
//     binary, sent into the pod at its start, probes which backend
//     confines in the pod and runs each command through sandbox.Run
//     (internal/podrun); a pod where none does runs nothing (ErrNoWalls).
//   - An in-process editor (the api engine's) reads and writes the fork's
//     files in its pod over exec (files.go); a command with the proxy
//     network (--network allow) reaches forkbomb's proxy through a tunnel
//     over the API (tunnel.go, internal/tunnel), so no pod needs a route
//     to this machine.
//   - One anchor object per run (a coordination.k8s.io Lease) owns every
//     Pod and NetworkPolicy of the run, so deleting it — forkbomb does on
//     exit, any later forkbomb does for a run whose lease lapsed (a kill
//     -9) — lets the cluster's garbage collector delete the rest; each Pod
//     also carries activeDeadlineSeconds, so none runs past its deadline
//     even if nothing is ever deleted.
//
// Only the Kubernetes API is spoken, through client-go's dynamic client:
// the same code creates plain Pods and, where the cluster serves
// kubernetes-sigs/agent-sandbox's Sandbox CRD (whose Go module the module
// proxy does not serve), Sandboxes from the same pod template.
package kube
