package layerfs

// resolutions: macOS has one, a name at a time (walk.go).
var resolutions = []resolution{{"stepwise", Open}}
