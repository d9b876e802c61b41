package cmpopts

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestHiddenApproxExact(t *testing.T) {
	if !cmp.Equal(1.5, 1.5, EquateApprox(0, 0)) {
		t.Fatal("equal floats differ under EquateApprox(0, 0)")
	}
}
