package tensor_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/gotpu/gotpu/tensor"
)

// TestReleaseRestoreStorage checks FSDP's storage life cycle: a weight
// autograd saved is released after forward (reads fail naming freed
// storage), restored and refilled under PreserveVersion, and backward
// then gives the gradients it gives without the release.
func TestReleaseRestoreStorage(t *testing.T) {
	cpu := tensor.MustDevice("cpu")
	vals := []float32{0.5, -1, 2, 3, -0.25, 1.5}
	tests := []struct {
		name    string
		release bool
		bump    bool // refill without PreserveVersion: backward must refuse
	}{
		{"kept", false, false},
		{"released-and-restored", true, false},
		{"refilled-without-preserve", true, true},
	}
	var want []float64
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := tensor.FromSlice(cpu, vals, 2, 3).SetRequiresGrad(true)
			x := tensor.FromSlice(cpu, []float32{1, 2, 3, 4, 5, 6}, 2, 3).SetRequiresGrad(true)
			loss := x.Matmul(w.T()).Sum(nil, false)
			v0 := w.Version()
			if tc.release {
				w.ReleaseStorage()
				if !w.StorageReleased() {
					t.Fatal("StorageReleased = false after ReleaseStorage")
				}
				err := tensor.Catch(func() { w.Add(w) })
				if err == nil || !strings.Contains(err.Error(), "freed") {
					t.Fatalf("reading a released storage: err = %v, want a freed-storage error", err)
				}
				w.RestoreStorage()
				fill := func() {
					if !w.WithHostBytes(true, func(b []byte) { copy(b, tensor.FromSlice(cpu, vals).Bytes()) }) {
						t.Fatal("WithHostBytes refused the restored storage")
					}
				}
				if tc.bump {
					fill()
				} else {
					tensor.PreserveVersion(w, fill)
					if w.Version() != v0 {
						t.Fatalf("version %d after PreserveVersion, want %d", w.Version(), v0)
					}
				}
			}
			err := tensor.Catch(func() { loss.Backward() })
			if tc.bump {
				if err == nil {
					t.Fatal("backward accepted a saved tensor modified in place")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := slices.Concat(w.Grad().Float64s(), x.Grad().Float64s())
			if want == nil {
				want = got
				return
			}
			if !slices.Equal(got, want) {
				t.Fatalf("gradients %v, want %v", got, want)
			}
		})
	}
}
