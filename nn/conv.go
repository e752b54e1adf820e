package nn

import (
	"fmt"
	"slices"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/tensor"
)

// ConvOpts are the optional arguments of the convolution modules; a
// one-element list applies to every spatial dim, as torch's int arguments.
// The zero value is torch's default (stride 1, padding 0, dilation 1, one
// group, a bias, zero padding).
type ConvOpts struct {
	Stride, Padding, Dilation []int
	// PaddingString "same" or "valid" replaces Padding (torch's
	// padding="same"/"valid"; not for transposed convolutions).
	PaddingString string
	// OutputPadding adds size to one side of a transposed convolution's
	// output (ConvTranspose only).
	OutputPadding []int
	Groups        int // 0 means 1
	NoBias        bool
	// PaddingMode is "zeros" (or ""), "reflect", "replicate" or "circular"
	// (transposed convolutions support only zeros).
	PaddingMode string
}

// Conv is an N-d convolution or transposed convolution module: Conv1d,
// Conv2d, ConvTranspose1d and ConvTranspose2d are Conv. Weight is [out,
// in/groups, *k] ([in, out/groups, *k] when transposed), Bias [out] or nil;
// both start as U(-1/√fan_in, 1/√fan_in) as in torch.
type Conv struct {
	Base
	InChannels, OutChannels                          int
	KernelSize, Stride, Padding, Dilation, OutputPad []int
	PaddingString, PaddingMode                       string
	Groups                                           int
	Transposed                                       bool
	Weight, Bias                                     *tensor.Tensor
	name                                             string
	reversedPadding                                  []int // F.pad amounts for non-zero padding modes
}

// Conv1d is Conv over [N, C, L] or [C, L] inputs (torch.nn.Conv1d).
type Conv1d = Conv

// Conv2d is Conv over [N, C, H, W] or [C, H, W] inputs (torch.nn.Conv2d).
type Conv2d = Conv

// ConvTranspose1d is a transposed Conv over [N, C, L] (torch.nn.ConvTranspose1d).
type ConvTranspose1d = Conv

// ConvTranspose2d is a transposed Conv over [N, C, H, W]
// (torch.nn.ConvTranspose2d).
type ConvTranspose2d = Conv

// NewConv1d returns a Conv1d with kernelSize (1 element).
func NewConv1d(dev device.Device, in, out int, kernelSize []int, co ConvOpts, opts ...Option) *Conv1d {
	return newConv("Conv1d", 1, false, dev, in, out, kernelSize, co, opts)
}

// NewConv2d returns a Conv2d with kernelSize (1 or 2 elements).
func NewConv2d(dev device.Device, in, out int, kernelSize []int, co ConvOpts, opts ...Option) *Conv2d {
	return newConv("Conv2d", 2, false, dev, in, out, kernelSize, co, opts)
}

// NewConvTranspose1d returns a ConvTranspose1d.
func NewConvTranspose1d(dev device.Device, in, out int, kernelSize []int, co ConvOpts, opts ...Option) *ConvTranspose1d {
	return newConv("ConvTranspose1d", 1, true, dev, in, out, kernelSize, co, opts)
}

// NewConvTranspose2d returns a ConvTranspose2d.
func NewConvTranspose2d(dev device.Device, in, out int, kernelSize []int, co ConvOpts, opts ...Option) *ConvTranspose2d {
	return newConv("ConvTranspose2d", 2, true, dev, in, out, kernelSize, co, opts)
}

func newConv(name string, nd int, transposed bool, dev device.Device, in, out int, kernelSize []int, co ConvOpts, opts []Option) *Conv {
	o := makeOptions(opts)
	groups := co.Groups
	if groups == 0 {
		groups = 1
	}
	positive(name, "groups", groups)
	nonNegative(name, "in_channels and out_channels", in, out)
	if in%groups != 0 {
		fail(name, nil, "in_channels must be divisible by groups")
	}
	if out%groups != 0 {
		fail(name, nil, "out_channels must be divisible by groups")
	}
	m := &Conv{InChannels: in, OutChannels: out, Groups: groups, Transposed: transposed, name: name,
		KernelSize:    tuple(name, "kernel_size", kernelSize, nd, 0),
		Stride:        tuple(name, "stride", co.Stride, nd, 1),
		Padding:       tuple(name, "padding", co.Padding, nd, 0),
		Dilation:      tuple(name, "dilation", co.Dilation, nd, 1),
		OutputPad:     tuple(name, "output_padding", co.OutputPadding, nd, 0),
		PaddingString: co.PaddingString, PaddingMode: co.PaddingMode}
	if m.PaddingMode == "" {
		m.PaddingMode = "zeros"
	}
	positive(name, "kernel_size", m.KernelSize...)
	positive(name, "stride", m.Stride...)
	positive(name, "dilation", m.Dilation...)
	nonNegative(name, "padding", m.Padding...)
	nonNegative(name, "output_padding", m.OutputPad...)
	switch m.PaddingMode {
	case "zeros":
	case "reflect", "replicate", "circular":
		if transposed {
			fail(name, nil, "only \"zeros\" padding mode is supported for %s", name)
		}
	default:
		fail(name, nil, "padding_mode must be one of zeros, reflect, replicate or circular, got %q", m.PaddingMode)
	}
	if !transposed && slices.ContainsFunc(m.OutputPad, func(v int) bool { return v != 0 }) {
		fail(name, nil, "output_padding is only for transposed convolutions")
	}
	for i := range m.OutputPad {
		if transposed && m.OutputPad[i] >= max(m.Stride[i], m.Dilation[i]) {
			fail(name, nil, "output padding must be smaller than either stride or dilation, got output_padding=%v stride=%v dilation=%v", m.OutputPad, m.Stride, m.Dilation)
		}
	}
	switch m.PaddingString {
	case "":
	case "valid":
		m.Padding = make([]int, nd)
		m.PaddingString = ""
	case "same":
		if transposed {
			fail(name, nil, "padding=\"same\" is not supported for transposed convolutions")
		}
		if slices.ContainsFunc(m.Stride, func(v int) bool { return v != 1 }) {
			fail(name, nil, "padding='same' is not supported for strided convolutions")
		}
	default:
		fail(name, nil, "invalid padding string %q, should be one of same, valid", m.PaddingString)
	}
	// torch's _reversed_padding_repeated_twice: F.pad amounts, last dim first.
	m.reversedPadding = make([]int, 2*nd)
	for i := 0; i < nd; i++ {
		j := nd - 1 - i
		lo, hi := m.Padding[i], m.Padding[i]
		if m.PaddingString == "same" {
			total := m.Dilation[i] * (m.KernelSize[i] - 1)
			lo = total / 2
			hi = total - lo
		}
		m.reversedPadding[2*j], m.reversedPadding[2*j+1] = lo, hi
	}
	var wshape []int
	if transposed {
		wshape = append([]int{in, out / groups}, m.KernelSize...)
	} else {
		wshape = append([]int{out, in / groups}, m.KernelSize...)
	}
	m.Weight = m.RegisterParameter("weight", o.kaimingDefault(o.empty(dev, wshape...)))
	if co.NoBias {
		m.RegisterParameter("bias", nil)
	} else {
		m.Bias = m.RegisterParameter("bias", o.uniform(dev, biasBound(m.Weight), out))
	}
	return m
}

// Forward convolves x [N, InChannels, *spatial] (or unbatched [InChannels,
// *spatial]).
func (m *Conv) Forward(x *tensor.Tensor) *tensor.Tensor {
	nd := len(m.KernelSize)
	if x.Dim() != nd+1 && x.Dim() != nd+2 {
		fail(m.name, []*tensor.Tensor{x, m.Weight}, "expected %dD (unbatched) or %dD (batched) input", nd+1, nd+2)
	}
	if c := x.Size(x.Dim() - nd - 1); c != m.InChannels {
		fail(m.name, []*tensor.Tensor{x, m.Weight}, "expected input with %d channels, got %d", m.InChannels, c)
	}
	if m.Transposed {
		o := tensor.ConvTransposeOpts{Stride: m.Stride, Padding: m.Padding, OutputPadding: m.OutputPad, Dilation: m.Dilation, Groups: m.Groups}
		if nd == 1 {
			return tensor.ConvTranspose1d(x, m.Weight, m.Bias, o)
		}
		return tensor.ConvTranspose2d(x, m.Weight, m.Bias, o)
	}
	o := tensor.ConvOpts{Stride: m.Stride, Padding: m.Padding, Dilation: m.Dilation, Groups: m.Groups, PaddingMode: m.PaddingString}
	if m.PaddingMode != "zeros" {
		x = tensor.Pad(x, m.reversedPadding, m.PaddingMode, 0)
		o.Padding = make([]int, nd)
		o.PaddingMode = ""
	}
	if nd == 1 {
		return tensor.Conv1d(x, m.Weight, m.Bias, o)
	}
	return tensor.Conv2d(x, m.Weight, m.Bias, o)
}

// ForwardSize is Forward of a transposed convolution with the output's
// spatial size chosen among the sizes the stride makes ambiguous (torch's
// forward(input, output_size)): outputSize lists the spatial sizes, or
// [N, C, *spatial].
func (m *Conv) ForwardSize(x *tensor.Tensor, outputSize []int) *tensor.Tensor {
	nd := len(m.KernelSize)
	if !m.Transposed {
		fail(m.name, []*tensor.Tensor{x}, "output_size is only for transposed convolutions")
	}
	if len(outputSize) == nd+2 {
		outputSize = outputSize[2:]
	}
	if len(outputSize) != nd || x.Dim() < nd {
		fail(m.name, []*tensor.Tensor{x}, "output_size must have %d or %d elements, got %v", nd, nd+2, outputSize)
	}
	pad := make([]int, nd)
	for d := 0; d < nd; d++ {
		in := x.Size(x.Dim() - nd + d)
		minSize := (in-1)*m.Stride[d] - 2*m.Padding[d] + m.Dilation[d]*(m.KernelSize[d]-1) + 1
		maxSize := minSize + m.Stride[d] - 1
		if outputSize[d] < minSize || outputSize[d] > maxSize {
			fail(m.name, []*tensor.Tensor{x}, "requested an output size of %v, but valid sizes range from %d to %d (for an input of %v)",
				outputSize, minSize, maxSize, x.Shape()[x.Dim()-nd:])
		}
		pad[d] = outputSize[d] - minSize
	}
	o := tensor.ConvTransposeOpts{Stride: m.Stride, Padding: m.Padding, OutputPadding: pad, Dilation: m.Dilation, Groups: m.Groups}
	if nd == 1 {
		return tensor.ConvTranspose1d(x, m.Weight, m.Bias, o)
	}
	return tensor.ConvTranspose2d(x, m.Weight, m.Bias, o)
}

// String describes the module as torch's repr does.
func (m *Conv) String() string {
	return fmt.Sprintf("%s(%d, %d, kernel_size=%v, stride=%v)", m.name, m.InChannels, m.OutChannels, m.KernelSize, m.Stride)
}
