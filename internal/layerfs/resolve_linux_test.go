package layerfs

// resolutions: openat2 (what Linux uses) and the one name at a time of
// macOS (walk.go), attacked here on this kernel too.
var resolutions = []resolution{{"openat2", Open}, {"stepwise", openStepwise}}

func openStepwise(dir string) (*Dir, error) {
	d, err := Open(dir)
	if err == nil {
		d.stepwise = true
	}
	return d, err
}
