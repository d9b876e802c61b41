package sandbox

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// availableMemory is the memory this process may use: the machine's, or
// its own cgroup's limit when that is smaller (a container). 0 when unknown.
func availableMemory() int64 {
	var si unix.Sysinfo_t
	total := int64(0)
	if unix.Sysinfo(&si) == nil {
		total = int64(si.Totalram) * int64(si.Unit)
	}
	var files []string
	if mnt := mountpointOf("cgroup2", ""); mnt != "" {
		files = append(files, filepath.Join(mnt, ownCgroup(""), "memory.max"))
	}
	if mnt := mountpointOf("cgroup", "memory"); mnt != "" {
		files = append(files, filepath.Join(mnt, ownCgroup("memory"), "memory.limit_in_bytes"))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64); err == nil && n > 0 && (total == 0 || n < total) {
			total = n
		}
	}
	return total
}
