package cpu

import (
	"slices"
	"testing"
)

// TestOffsets checks offsets against the definition (row-major order over
// axes, each offset Σ idx·stride) for one, two and three axes, axes in any
// order, negative and zero strides and empty extents.
func TestOffsets(t *testing.T) {
	for _, tc := range []struct {
		shape, strides, axes []int
	}{
		{[]int{5}, []int{3}, []int{0}},
		{[]int{4, 6}, []int{6, 1}, []int{0}},
		{[]int{4, 6}, []int{6, 1}, []int{1}},
		{[]int{4, 6}, []int{6, 1}, []int{0, 1}},
		{[]int{4, 6}, []int{6, 1}, []int{1, 0}},
		{[]int{3, 0, 2}, []int{2, 2, 1}, []int{0, 1}},
		{[]int{2, 3, 4}, []int{12, -4, 0}, []int{0, 1, 2}},
		{[]int{2, 3, 4}, []int{12, 4, 1}, []int{2, 0, 1}},
	} {
		var want []int
		var walk func(d, off int)
		walk = func(d, off int) {
			if d == len(tc.axes) {
				want = append(want, off)
				return
			}
			ax := tc.axes[d]
			for i := range tc.shape[ax] {
				walk(d+1, off+i*tc.strides[ax])
			}
		}
		walk(0, 0)
		got := offsets(tc.shape, tc.strides, tc.axes)
		if len(got) != len(want) || (len(want) > 0 && !slices.Equal(got, want)) {
			t.Errorf("offsets(%v, %v, %v) = %v, want %v", tc.shape, tc.strides, tc.axes, got, want)
		}
	}
}
