package sandbox

// FindGitDirs returns every git directory below root (see walkGitDirs):
// what the seatbelt backend keeps read-only in a writable tree.
func FindGitDirs(root string) ([]string, error) { return walkGitDirs(root) }
