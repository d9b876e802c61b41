package sandbox

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseBytes reads a byte count such as 512M, 2G, 1.5GiB or 4096 (binary
// units: K = 1024): the spelling of every size flag and policy setting.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(strings.ToUpper(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "I")
	mult := int64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult != 1 {
			t = t[:n-1]
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("%q is not a size (try 512M or 2G)", s)
	}
	return int64(f * float64(mult)), nil
}
