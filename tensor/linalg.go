package tensor

import (
	"sync/atomic"

	"github.com/gotpu/gotpu/op"
)

// Linear algebra, convolution and pooling (torch.matmul, mm, bmm, addmm,
// linear, einsum, nn.functional.conv2d, max_pool2d, ...). Matrix products
// and convolutions run at the process-wide matmul precision (see
// SetMatmulPrecision) unless a per-call precision is given.

var matmulPrecision atomic.Value // string

// SetMatmulPrecision sets the precision of f32 matrix products and
// convolutions for the whole process (torch.set_float32_matmul_precision):
// "highest" (full f32), "high" (three bf16 passes), "medium" (one bf16 pass)
// or "" for each device's default (cpu: highest). Every bf16 product is
// exact in f32 and the sums are f32. On a CPU with AVX512_BF16 (level
// avx512bf16, backend/cpu) the bf16 passes run on VDPBF16PS, which treats
// denormal bf16 inputs as zero and flushes denormal partial sums to zero;
// elsewhere denormals are IEEE (see backend/cpu/linalg.go for the exact
// contract; bf16 tensors' products follow the same rule). It returns the previous
// setting and panics on an unknown name. The setting is read when an op is
// called, so it applies to every goroutine from then on.
func SetMatmulPrecision(p string) string {
	if err := op.CheckPrecision("set_matmul_precision", p); err != nil {
		panic(&Error{Op: "set_matmul_precision", Msg: err.Error(), Err: err})
	}
	prev, _ := matmulPrecision.Swap(p).(string)
	return prev
}

// MatmulPrecision returns the process-wide matmul precision ("" means the
// device default).
func MatmulPrecision() string {
	p, _ := matmulPrecision.Load().(string)
	return p
}

func precAttrs(p string) op.Attrs {
	if p == "" {
		p = MatmulPrecision()
	}
	return op.Attrs{"precision": p}
}

// DotGeneralDims are the dimension numbers of DotGeneral.
type DotGeneralDims struct {
	LhsBatch, RhsBatch       []int
	LhsContract, RhsContract []int
	// Precision overrides the process-wide matmul precision when not "".
	Precision string
}

func intsOrEmpty(v []int) []int {
	if v == nil {
		return []int{}
	}
	return append([]int(nil), v...)
}

// DotGeneral is StableHLO's dot_general: it contracts lhs and rhs over the
// contracting axes, pairing the batch axes; the result's axes are the batch
// axes, then lhs's free axes, then rhs's free axes.
func DotGeneral(lhs, rhs *Tensor, d DotGeneralDims) *Tensor {
	a := precAttrs(d.Precision)
	a["lhs_batch"], a["rhs_batch"] = intsOrEmpty(d.LhsBatch), intsOrEmpty(d.RhsBatch)
	a["lhs_contract"], a["rhs_contract"] = intsOrEmpty(d.LhsContract), intsOrEmpty(d.RhsContract)
	return Apply1("dot_general", []*Tensor{lhs, rhs}, a)
}

// MatmulPrec is Matmul at an explicit precision ("highest", "high", "medium").
func MatmulPrec(a, b *Tensor, precision string) *Tensor {
	return Apply1("matmul", []*Tensor{a, b}, precAttrs(precision))
}

// AddmmInPlace sets t to beta*t + alpha*(mat1 @ mat2) (Tensor.addmm_) and
// returns t.
func (t *Tensor) AddmmInPlace(mat1, mat2 *Tensor, beta, alpha any) *Tensor {
	return t.inplace("addmm_", func() *Tensor { return AddmmScaled(t, mat1, mat2, beta, alpha) })
}

// BaddbmmInPlace sets t to beta*t + alpha*bmm(batch1, batch2)
// (Tensor.baddbmm_) and returns t.
func (t *Tensor) BaddbmmInPlace(batch1, batch2 *Tensor, beta, alpha any) *Tensor {
	return t.inplace("baddbmm_", func() *Tensor { return BaddbmmScaled(t, batch1, batch2, beta, alpha) })
}

// Einsum evaluates an Einstein-summation equation (torch.einsum):
// "ij,jk->ik", implicit output ("ij,jk"), repeated subscripts for diagonals
// and traces ("ii->i", "ii"), and "..." for broadcast dimensions.
func Einsum(equation string, operands ...*Tensor) *Tensor {
	a := precAttrs("")
	a["equation"] = equation
	return Apply1("einsum", operands, a)
}

// ConvOpts are the options of Conv1d and Conv2d. Zero values take
// PyTorch's defaults: stride 1, padding 0, dilation 1, groups 1. A list of
// one value applies to every spatial dimension.
type ConvOpts struct {
	Stride, Padding, Dilation []int
	Groups                    int
	// PaddingMode "same" or "valid" replaces Padding (torch's padding="same").
	PaddingMode string
	// Precision overrides the process-wide matmul precision when not "".
	Precision string
}

// Conv2dOpts are the options of Conv2d.
type Conv2dOpts = ConvOpts

func (o ConvOpts) attrs() op.Attrs {
	a := precAttrs(o.Precision)
	a["stride"] = listOr(o.Stride, 1)
	a["padding"] = listOr(o.Padding, 0)
	a["dilation"] = listOr(o.Dilation, 1)
	a["groups"] = max(o.Groups, 1)
	a["padding_str"] = o.PaddingMode
	return a
}

func listOr(v []int, def int) []int {
	if len(v) == 0 {
		return []int{def}
	}
	return append([]int(nil), v...)
}

// Conv1d convolves x [N, C, L] (or [C, L]) with w [Cout, C/groups, k] and
// adds b [Cout] if not nil (torch.nn.functional.conv1d).
func Conv1d(x, w, b *Tensor, o ConvOpts) *Tensor {
	return Apply1("conv1d", []*Tensor{x, w, b}, o.attrs())
}

// Conv2d convolves x [N, C, H, W] (or [C, H, W]) with w [Cout, C/groups, kh,
// kw] and adds b [Cout] if not nil (torch.nn.functional.conv2d).
func Conv2d(x, w, b *Tensor, o Conv2dOpts) *Tensor {
	return Apply1("conv2d", []*Tensor{x, w, b}, o.attrs())
}

// ConvTransposeOpts are the options of ConvTranspose1d and ConvTranspose2d;
// zero values take PyTorch's defaults.
type ConvTransposeOpts struct {
	Stride, Padding, OutputPadding, Dilation []int
	Groups                                   int
	Precision                                string
}

func (o ConvTransposeOpts) attrs() op.Attrs {
	a := precAttrs(o.Precision)
	a["stride"] = listOr(o.Stride, 1)
	a["padding"] = listOr(o.Padding, 0)
	a["output_padding"] = listOr(o.OutputPadding, 0)
	a["dilation"] = listOr(o.Dilation, 1)
	a["groups"] = max(o.Groups, 1)
	return a
}

// ConvTranspose1d is the transposed 1-d convolution of x [N, Cin, L] with w
// [Cin, Cout/groups, k] (torch.nn.functional.conv_transpose1d).
func ConvTranspose1d(x, w, b *Tensor, o ConvTransposeOpts) *Tensor {
	return Apply1("conv_transpose1d", []*Tensor{x, w, b}, o.attrs())
}

// ConvTranspose2d is the transposed 2-d convolution of x [N, Cin, H, W] with
// w [Cin, Cout/groups, kh, kw] (torch.nn.functional.conv_transpose2d).
func ConvTranspose2d(x, w, b *Tensor, o ConvTransposeOpts) *Tensor {
	return Apply1("conv_transpose2d", []*Tensor{x, w, b}, o.attrs())
}

// ConvolutionOpts are the options of the N-d convolution primitive.
type ConvolutionOpts struct {
	Stride, Padding, Dilation, OutputPadding []int
	// PaddingHigh, when set, pads the end of each spatial dim differently
	// from its start (Padding).
	PaddingHigh []int
	Transposed  bool
	Groups      int
	Precision   string
}

// Convolution is the N-d convolution primitive (torch.ops.aten.convolution):
// x is [N, C, *spatial], w [Cout, C/groups, *k] (transposed: [C, Cout/groups,
// *k]), b [Cout] or nil.
func Convolution(x, w, b *Tensor, o ConvolutionOpts) *Tensor {
	a := precAttrs(o.Precision)
	a["stride"] = listOr(o.Stride, 1)
	a["padding"] = listOr(o.Padding, 0)
	a["dilation"] = listOr(o.Dilation, 1)
	a["output_padding"] = listOr(o.OutputPadding, 0)
	a["groups"] = max(o.Groups, 1)
	a["transposed"] = o.Transposed
	if o.PaddingHigh != nil {
		a["padding_high"] = append([]int(nil), o.PaddingHigh...)
	}
	return Apply1("convolution", []*Tensor{x, w, b}, a)
}

// PoolOpts are the options of max pooling: KernelSize is required; a nil
// Stride means KernelSize; zero Padding and Dilation take PyTorch's defaults.
type PoolOpts struct {
	KernelSize, Stride, Padding, Dilation []int
	CeilMode                              bool
}

func (o PoolOpts) attrs() op.Attrs {
	return op.Attrs{"kernel_size": intsOrEmpty(o.KernelSize), "stride": intsOrEmpty(o.Stride),
		"padding": listOr(o.Padding, 0), "dilation": listOr(o.Dilation, 1), "ceil_mode": o.CeilMode}
}

// MaxPool2d is 2-d max pooling of [N, C, H, W] or [C, H, W]
// (torch.nn.functional.max_pool2d).
//
// When autograd records x (gradients enabled, x requires grad), the forward
// is max_pool2d_with_indices, as in PyTorch: the backward then routes the
// gradient with the indices the forward found instead of pooling again.
// The values are the same (a signaling NaN maximum stays signaling there,
// where max_pool2d quiets it).
func MaxPool2d(x *Tensor, o PoolOpts) *Tensor {
	if GradEnabled() && x.RequiresGrad() {
		v, _ := MaxPool2dWithIndices(x, o)
		return v
	}
	return Apply1("max_pool2d", []*Tensor{x}, o.attrs())
}

// MaxPool2dWithIndices is MaxPool2d that also returns the flat h*W+w index
// of every maximum within its plane (return_indices=True).
func MaxPool2dWithIndices(x *Tensor, o PoolOpts) (values, indices *Tensor) {
	r := Apply("max_pool2d_with_indices", []*Tensor{x}, o.attrs())
	return r[0], r[1]
}

// MaxPool1d is 1-d max pooling of [N, C, L] or [C, L] (torch.nn.functional.max_pool1d).
func MaxPool1d(x *Tensor, o PoolOpts) *Tensor { return Apply1("max_pool1d", []*Tensor{x}, o.attrs()) }

// AvgPoolOpts are the options of average pooling. ExcludePad is the
// negation of PyTorch's count_include_pad (so the zero value is PyTorch's
// default); DivisorOverride 0 means none.
type AvgPoolOpts struct {
	KernelSize, Stride, Padding []int
	CeilMode                    bool
	ExcludePad                  bool
	DivisorOverride             int
}

func (o AvgPoolOpts) attrs() op.Attrs {
	a := op.Attrs{"kernel_size": intsOrEmpty(o.KernelSize), "stride": intsOrEmpty(o.Stride),
		"padding": listOr(o.Padding, 0), "ceil_mode": o.CeilMode, "count_include_pad": !o.ExcludePad}
	if o.DivisorOverride != 0 {
		a["divisor_override"] = o.DivisorOverride
	}
	return a
}

// AvgPool2d is 2-d average pooling (torch.nn.functional.avg_pool2d).
func AvgPool2d(x *Tensor, o AvgPoolOpts) *Tensor {
	return Apply1("avg_pool2d", []*Tensor{x}, o.attrs())
}

// AvgPool1d is 1-d average pooling (torch.nn.functional.avg_pool1d);
// DivisorOverride is not available in 1-d, as in PyTorch.
func AvgPool1d(x *Tensor, o AvgPoolOpts) *Tensor {
	a := o.attrs()
	delete(a, "divisor_override")
	return Apply1("avg_pool1d", []*Tensor{x}, a)
}

// AdaptiveAvgPool2d averages [N, C, H, W] (or [C, H, W]) down to [.., oh, ow]
// (torch.nn.functional.adaptive_avg_pool2d).
func AdaptiveAvgPool2d(x *Tensor, oh, ow int) *Tensor {
	return Apply1("adaptive_avg_pool2d", []*Tensor{x}, op.Attrs{"output_size": []int{oh, ow}})
}

// AdaptiveMaxPool2d max-pools down to [.., oh, ow] and returns the values and
// the flat h*W+w indices (torch.nn.functional.adaptive_max_pool2d).
func AdaptiveMaxPool2d(x *Tensor, oh, ow int) (values, indices *Tensor) {
	r := Apply("adaptive_max_pool2d", []*Tensor{x}, op.Attrs{"output_size": []int{oh, ow}})
	return r[0], r[1]
}

// WindowOpts are the options of ReduceWindow: one entry per input dimension
// (nil: strides and dilation 1, padding 0).
type WindowOpts struct {
	Window, Strides, Dilation, PaddingLow, PaddingHigh []int
}

// ReduceWindow is StableHLO's reduce_window with kind "max" or "sum":
// every output element reduces a (dilated, strided, padded) window of x.
func ReduceWindow(x *Tensor, kind string, o WindowOpts) *Tensor {
	return Apply1("reduce_window", []*Tensor{x}, op.Attrs{"kind": kind, "window": intsOrEmpty(o.Window),
		"strides": intsOrEmpty(o.Strides), "dilation": intsOrEmpty(o.Dilation),
		"padding_low": intsOrEmpty(o.PaddingLow), "padding_high": intsOrEmpty(o.PaddingHigh)})
}
