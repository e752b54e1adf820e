package nn

import (
	"github.com/gotpu/gotpu/tensor"
)

// PoolOpts are the optional arguments of MaxPool2d and AvgPool2d (a single
// element applies to both spatial dims, as torch's int arguments).
type PoolOpts struct {
	// Stride nil means KernelSize (torch's stride=None).
	Stride   []int
	Padding  []int // nil means 0
	Dilation []int // MaxPool2d only; nil means 1
	CeilMode bool
	// CountExcludePad is AvgPool2d's count_include_pad=False.
	CountExcludePad bool
	// DivisorOverride, when > 0, replaces the window size as AvgPool2d's
	// divisor.
	DivisorOverride int
}

// MaxPool2d takes the maximum over KernelSize windows of [N, C, H, W] or
// [C, H, W] inputs (torch.nn.MaxPool2d).
type MaxPool2d struct {
	Base
	KernelSize, Stride, Padding, Dilation []int
	CeilMode                              bool
}

// NewMaxPool2d returns a MaxPool2d.
func NewMaxPool2d(kernelSize []int, po PoolOpts) *MaxPool2d {
	k := tuple("MaxPool2d", "kernel_size", kernelSize, 2, 0)
	positive("MaxPool2d", "kernel_size", k...)
	m := &MaxPool2d{KernelSize: k, Stride: tuple("MaxPool2d", "stride", po.Stride, 2, 0),
		Padding: tuple("MaxPool2d", "padding", po.Padding, 2, 0), Dilation: tuple("MaxPool2d", "dilation", po.Dilation, 2, 1), CeilMode: po.CeilMode}
	if po.Stride == nil {
		m.Stride = k
	}
	positive("MaxPool2d", "stride", m.Stride...)
	positive("MaxPool2d", "dilation", m.Dilation...)
	for i, p := range m.Padding {
		if p < 0 || p > k[i]/2 {
			fail("MaxPool2d", nil, "pad should be at most half of effective kernel size, but got pad=%v and kernel_size=%v", m.Padding, k)
		}
	}
	return m
}

func (m *MaxPool2d) opts() tensor.PoolOpts {
	return tensor.PoolOpts{KernelSize: m.KernelSize, Stride: m.Stride, Padding: m.Padding, Dilation: m.Dilation, CeilMode: m.CeilMode}
}

// Forward pools x.
func (m *MaxPool2d) Forward(x *tensor.Tensor) *tensor.Tensor { return tensor.MaxPool2d(x, m.opts()) }

// ForwardWithIndices pools x and also returns the flat h·W+w index of each
// maximum in its plane (return_indices=True).
func (m *MaxPool2d) ForwardWithIndices(x *tensor.Tensor) (values, indices *tensor.Tensor) {
	return tensor.MaxPool2dWithIndices(x, m.opts())
}

// AvgPool2d averages over KernelSize windows (torch.nn.AvgPool2d).
type AvgPool2d struct {
	Base
	KernelSize, Stride, Padding []int
	CeilMode, CountIncludePad   bool
	DivisorOverride             int
}

// NewAvgPool2d returns an AvgPool2d.
func NewAvgPool2d(kernelSize []int, po PoolOpts) *AvgPool2d {
	k := tuple("AvgPool2d", "kernel_size", kernelSize, 2, 0)
	positive("AvgPool2d", "kernel_size", k...)
	m := &AvgPool2d{KernelSize: k, Stride: tuple("AvgPool2d", "stride", po.Stride, 2, 0),
		Padding: tuple("AvgPool2d", "padding", po.Padding, 2, 0), CeilMode: po.CeilMode,
		CountIncludePad: !po.CountExcludePad, DivisorOverride: po.DivisorOverride}
	if po.Stride == nil {
		m.Stride = k
	}
	positive("AvgPool2d", "stride", m.Stride...)
	for i, p := range m.Padding {
		if p < 0 || p > k[i]/2 {
			fail("AvgPool2d", nil, "pad should be at most half of kernel size, but got pad=%v and kernel_size=%v", m.Padding, k)
		}
	}
	if po.DivisorOverride < 0 {
		fail("AvgPool2d", nil, "divisor must be not zero")
	}
	return m
}

// Forward pools x.
func (m *AvgPool2d) Forward(x *tensor.Tensor) *tensor.Tensor {
	return tensor.AvgPool2d(x, tensor.AvgPoolOpts{KernelSize: m.KernelSize, Stride: m.Stride, Padding: m.Padding,
		CeilMode: m.CeilMode, ExcludePad: !m.CountIncludePad, DivisorOverride: m.DivisorOverride})
}

// AdaptiveAvgPool2d averages [N, C, H, W] or [C, H, W] inputs down to
// OutputSize (torch.nn.AdaptiveAvgPool2d); an entry of -1 keeps that input
// dim (torch's None).
type AdaptiveAvgPool2d struct {
	Base
	OutputSize []int
}

// NewAdaptiveAvgPool2d returns an AdaptiveAvgPool2d; outputSize has 1 or 2
// elements.
func NewAdaptiveAvgPool2d(outputSize ...int) *AdaptiveAvgPool2d {
	s := tuple("AdaptiveAvgPool2d", "output_size", outputSize, 2, -2)
	for _, v := range s {
		if v < -1 {
			fail("AdaptiveAvgPool2d", nil, "output_size must be non-negative or -1 (None), got %v", outputSize)
		}
	}
	return &AdaptiveAvgPool2d{OutputSize: s}
}

// Forward pools x.
func (m *AdaptiveAvgPool2d) Forward(x *tensor.Tensor) *tensor.Tensor {
	if x.Dim() != 3 && x.Dim() != 4 {
		fail("AdaptiveAvgPool2d", []*tensor.Tensor{x}, "expected 3D or 4D input")
	}
	oh, ow := m.OutputSize[0], m.OutputSize[1]
	if oh < 0 {
		oh = x.Size(-2)
	}
	if ow < 0 {
		ow = x.Size(-1)
	}
	return tensor.AdaptiveAvgPool2d(x, oh, ow)
}
