package compile

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/tensor"
)

// TestSignature checks the cache signature's format: each input's dtype
// and shape as fmt prints them ("f32[2 3]"), nil for an absent one, joined
// by commas.
func TestSignature(t *testing.T) {
	meta := device.Device{Type: "meta"}
	var in []*tensor.Tensor
	if err := tensor.Catch(func() {
		in = []*tensor.Tensor{
			tensor.Empty(meta, dtype.F32, 2, 3),
			nil,
			tensor.Empty(meta, dtype.BF16),
			tensor.Empty(meta, dtype.I64, 1, 128, 9, 64),
			tensor.Empty(meta, dtype.U8, 0),
		}
	}); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, x := range in {
		if x == nil {
			want = append(want, "nil")
			continue
		}
		want = append(want, fmt.Sprintf("%s%v", x.DType(), x.Shape()))
	}
	if got, w := signature(in), strings.Join(want, ","); got != w {
		t.Fatalf("signature = %q, want %q", got, w)
	}
	if got := signature(nil); got != "" {
		t.Fatalf("signature(nil) = %q", got)
	}
}
