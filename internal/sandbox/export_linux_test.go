package sandbox

// CgroupWeighted says whether a sandbox with Policy.Nice nice (and no
// other limit) gets a cgroup carrying that weight here: the cgroup is made
// as a start would make it, then removed.
func CgroupWeighted(nice int) bool {
	cg, _ := newCgroup(0, 0, 0, nice > 0, nice)
	defer cg.remove()
	return cg.isWeighted()
}
