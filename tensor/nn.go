package tensor

import (
	"github.com/gotpu/gotpu/op"
)

// nn functional API (torch.nn.functional): normalisations, dropout,
// embedding, losses, attention and interpolation. Optional tensors are nil
// when absent.

// RMSNorm scales x by the reciprocal root mean square over its trailing dims
// normalizedShape, then by w (may be nil) (F.rms_norm). eps <= 0 means the
// dtype's machine epsilon, as PyTorch's eps=None.
func RMSNorm(x *Tensor, normalizedShape []int, w *Tensor, eps float64) *Tensor {
	a := op.Attrs{"normalized_shape": normalizedShape}
	if eps > 0 {
		a["eps"] = eps
	}
	return Apply1("rms_norm", []*Tensor{x, w}, a)
}

// BatchNormOpts are F.batch_norm's options; zero Momentum and Eps mean
// PyTorch's defaults 0.1 and 1e-5.
type BatchNormOpts struct {
	RunningMean, RunningVar *Tensor // updated in place when Training
	Weight, Bias            *Tensor
	Training                bool
	Momentum, Eps           float64
}

// BatchNorm normalises an [N, C, *] tensor per channel (F.batch_norm). In
// training it uses the batch statistics and, when running statistics are
// given, updates them in place as PyTorch does: running = (1 - momentum) *
// running + momentum * batch, with the unbiased batch variance.
func BatchNorm(x *Tensor, o BatchNormOpts) *Tensor {
	if o.Momentum == 0 {
		o.Momentum = 0.1
	}
	if o.Eps == 0 {
		o.Eps = 1e-5
	}
	out := Apply1("batch_norm", []*Tensor{x, o.RunningMean, o.RunningVar, o.Weight, o.Bias},
		op.Attrs{"training": o.Training, "momentum": o.Momentum, "eps": o.Eps})
	if o.Training && o.RunningMean != nil {
		dims := []int{0}
		for i := 2; i < x.Dim(); i++ {
			dims = append(dims, i)
		}
		xf := x
		if !x.dt.IsFloat() || x.dt.Size() < 4 {
			xf = Apply1("convert", []*Tensor{x}, op.Attrs{"dtype": o.RunningMean.dt})
		}
		mean := Apply1("mean", []*Tensor{xf}, op.Attrs{"dims": dims})
		uvar := Apply1("var", []*Tensor{xf}, op.Attrs{"dims": dims, "correction": 1.0})
		m := Scalar(o.Momentum)
		upd := func(run, batch *Tensor) {
			nv := Apply1("add", []*Tensor{
				Apply1("mul", []*Tensor{run, Scalar(1 - o.Momentum)}, nil),
				Apply1("mul", []*Tensor{batch, m}, nil)}, nil)
			run.copyInto("batch_norm", nv)
		}
		upd(o.RunningMean, mean)
		upd(o.RunningVar, uvar)
	}
	return out
}

// Dropout zeroes elements with probability p and scales the rest by
// 1/(1-p) when train is true; otherwise it returns a copy (F.dropout).
func Dropout(x *Tensor, p float64, train bool) *Tensor { return DropoutGen(nil, x, p, train) }

// DropoutGen is Dropout drawing from g (nil: the default generator).
func DropoutGen(g *Generator, x *Tensor, p float64, train bool) *Tensor {
	return randomOn(g, x.devOrCPU(), "dropout", []*Tensor{x}, op.Attrs{"p": p, "train": train}, x.Numel())
}

// OneHot returns i64 one-hot rows of length numClasses (F.one_hot); with
// numClasses < 0 it is max(x)+1, read from the data (a sync point).
func OneHot(x *Tensor, numClasses int) *Tensor {
	if numClasses < 0 {
		numClasses = 0
		if x.Numel() > 0 {
			for _, v := range x.Int64s() {
				numClasses = max(numClasses, int(v)+1)
			}
		}
	}
	return Apply1("one_hot", []*Tensor{x}, op.Attrs{"num_classes": numClasses})
}

// LossOpts holds the reduction shared by the loss functions: "mean" (the
// default when empty), "sum" or "none".
type LossOpts struct {
	Reduction string
}

func (o LossOpts) attrs() op.Attrs {
	if o.Reduction == "" {
		return op.Attrs{"reduction": "mean"}
	}
	return op.Attrs{"reduction": o.Reduction}
}

// CrossEntropyOpts are F.cross_entropy's options. IgnoreIndex defaults to
// -100 unless SetIgnoreIndex is true (so 0 can be ignored).
type CrossEntropyOpts struct {
	Weight         *Tensor
	IgnoreIndex    int
	SetIgnoreIndex bool
	Reduction      string
	LabelSmoothing float64
}

func (o CrossEntropyOpts) attrs() op.Attrs {
	a := LossOpts{o.Reduction}.attrs()
	a["ignore_index"] = -100
	if o.SetIgnoreIndex {
		a["ignore_index"] = o.IgnoreIndex
	}
	return a
}

// CrossEntropy is F.cross_entropy of logits [N, C, d...] (or [C]) against
// class indices or class probabilities.
func CrossEntropy(logits, target *Tensor, o CrossEntropyOpts) *Tensor {
	a := o.attrs()
	a["label_smoothing"] = o.LabelSmoothing
	return Apply1("cross_entropy", []*Tensor{logits, target, o.Weight}, a)
}

// NLLLoss is F.nll_loss of log-probabilities against class indices
// (LabelSmoothing is ignored).
func NLLLoss(logp, target *Tensor, o CrossEntropyOpts) *Tensor {
	return Apply1("nll_loss", []*Tensor{logp, target, o.Weight}, o.attrs())
}

// MSELoss is F.mse_loss.
func MSELoss(input, target *Tensor, o LossOpts) *Tensor {
	return Apply1("mse_loss", []*Tensor{input, target}, o.attrs())
}

// L1Loss is F.l1_loss.
func L1Loss(input, target *Tensor, o LossOpts) *Tensor {
	return Apply1("l1_loss", []*Tensor{input, target}, o.attrs())
}

// SmoothL1Loss is F.smooth_l1_loss with the given beta.
func SmoothL1Loss(input, target *Tensor, beta float64, o LossOpts) *Tensor {
	a := o.attrs()
	a["beta"] = beta
	return Apply1("smooth_l1_loss", []*Tensor{input, target}, a)
}

// HuberLoss is F.huber_loss with the given delta.
func HuberLoss(input, target *Tensor, delta float64, o LossOpts) *Tensor {
	a := o.attrs()
	a["delta"] = delta
	return Apply1("huber_loss", []*Tensor{input, target}, a)
}

// BinaryCrossEntropy is F.binary_cross_entropy of probabilities; weight may be nil.
func BinaryCrossEntropy(input, target, weight *Tensor, o LossOpts) *Tensor {
	return Apply1("binary_cross_entropy", []*Tensor{input, target, weight}, o.attrs())
}

// BinaryCrossEntropyWithLogits is F.binary_cross_entropy_with_logits;
// weight and posWeight may be nil.
func BinaryCrossEntropyWithLogits(input, target, weight, posWeight *Tensor, o LossOpts) *Tensor {
	return Apply1("binary_cross_entropy_with_logits", []*Tensor{input, target, weight, posWeight}, o.attrs())
}

// KLDiv is F.kl_div of log-probabilities input from target; reduction may
// also be "batchmean".
func KLDiv(input, target *Tensor, logTarget bool, o LossOpts) *Tensor {
	a := o.attrs()
	a["log_target"] = logTarget
	return Apply1("kl_div", []*Tensor{input, target}, a)
}

// SDPAOpts are F.scaled_dot_product_attention's options. Scale 0 means
// 1/sqrt(E). Mask is bool (true attends) or float (added), or nil.
type SDPAOpts struct {
	Mask      *Tensor
	DropoutP  float64
	IsCausal  bool
	Scale     float64
	EnableGQA bool
	Generator *Generator // for dropout; nil: the default generator
}

// PagedAttentionOpts are PagedAttention's options. Scale 0 means
// 1/sqrt(E). Mask is bool (true attends) or float (added), broadcast to
// [B, H, T, M·P], or nil.
type PagedAttentionOpts struct {
	Mask  *Tensor
	Scale float64
}

// PagedAttention is attention of q [B, H, T, E] over keys and values kept
// in blocks (vLLM's PagedAttention): kCache [N, P, Hkv, E] and vCache [N,
// P, Hkv, Ev] hold N blocks of P slots, and row b of blockTable [B, M]
// (integer) names the blocks of sequence b in order. It equals
// ScaledDotProductAttention of q over the gathered keys and values [B,
// Hkv, M·P, E] with grouped-query heads, without gathering them on
// backends with a direct kernel. It returns [B, H, T, Ev].
func PagedAttention(q, kCache, vCache, blockTable *Tensor, o PagedAttentionOpts) *Tensor {
	a := op.Attrs{}
	if o.Scale != 0 {
		a["scale"] = o.Scale
	}
	return Apply1("paged_attention", []*Tensor{q, kCache, vCache, blockTable, o.Mask}, a)
}

// ScaledDotProductAttention is softmax(q kᵀ * scale + mask) v
// (F.scaled_dot_product_attention).
func ScaledDotProductAttention(q, k, v *Tensor, o SDPAOpts) *Tensor {
	a := op.Attrs{"dropout_p": o.DropoutP, "is_causal": o.IsCausal, "enable_gqa": o.EnableGQA}
	if o.Scale != 0 {
		a["scale"] = o.Scale
	}
	in := []*Tensor{q, k, v, o.Mask}
	if o.Generator == nil {
		return Apply1("scaled_dot_product_attention", in, a)
	}
	// Reserve one counter per output element, as the default generator
	// does: the output's batch dims are the broadcast of q's, k's and v's.
	n := q.Size(-2) * v.Size(-1)
	qs, ks, vs := q.Shape(), k.Shape(), v.Shape()
	for i := 3; i <= max(len(qs), len(ks), len(vs)); i++ {
		d := 1
		for _, s := range [][]int{qs, ks, vs} {
			if len(s) >= i {
				d = max(d, s[len(s)-i])
			}
		}
		n *= d
	}
	return Apply1("scaled_dot_product_attention", in, WithGenerator(o.Generator, a, n))
}

// InterpolateOpts are F.interpolate's options: Size or ScaleFactor (one of
// them), Mode "nearest" (default) or "bilinear", AlignCorners for bilinear.
type InterpolateOpts struct {
	Size         []int
	ScaleFactor  []float64
	Mode         string
	AlignCorners bool
}

// Interpolate resizes the spatial dims of an [N, C, H, W] tensor (F.interpolate).
func Interpolate(x *Tensor, o InterpolateOpts) *Tensor {
	a := op.Attrs{"align_corners": o.AlignCorners}
	if o.Mode != "" {
		a["mode"] = o.Mode
	}
	if o.Size != nil {
		a["size"] = o.Size
	}
	if o.ScaleFactor != nil {
		a["scale_factor"] = o.ScaleFactor
	}
	return Apply1("interpolate", []*Tensor{x}, a)
}
