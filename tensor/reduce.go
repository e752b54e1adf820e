package tensor

import (
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// Reductions, scans and sorts (torch.sum, mean, max, argmax, var, norm,
// logsumexp, softmax, cumsum, sort, topk, ...). A dims argument of nil (or
// empty) reduces over every dimension; negative dims count from the end.

func dimsAttr(dims []int) []int {
	if dims == nil {
		return []int{}
	}
	return append([]int(nil), dims...)
}

func reduceAttrs(dims []int, keepdim bool) op.Attrs {
	return op.Attrs{"dims": dimsAttr(dims), "keepdim": keepdim}
}

// Sum returns the sum over dims (torch.sum); integer and bool inputs sum to
// int64.
func (t *Tensor) Sum(dims []int, keepdim bool) *Tensor {
	return Apply1("sum", []*Tensor{t}, reduceAttrs(dims, keepdim))
}

// SumAll returns the sum of all elements as a 0-d tensor.
func (t *Tensor) SumAll() *Tensor { return t.Sum(nil, false) }

// SumAs returns the sum over dims computed in dtype dt (torch.sum(dtype=dt)):
// the input is converted to dt first.
func (t *Tensor) SumAs(dt dtype.DType, dims []int, keepdim bool) *Tensor {
	return Apply1("sum", []*Tensor{t}, reduceAttrs(dims, keepdim).With("dtype", dt))
}

// Prod returns the product over dims (torch.prod); integer and bool inputs
// multiply in int64.
func (t *Tensor) Prod(dims []int, keepdim bool) *Tensor {
	return Apply1("prod", []*Tensor{t}, reduceAttrs(dims, keepdim))
}

// ProdAll returns the product of all elements as a 0-d tensor.
func (t *Tensor) ProdAll() *Tensor { return t.Prod(nil, false) }

// ProdAs returns the product over dims computed in dtype dt (torch.prod(dtype=dt)).
func (t *Tensor) ProdAs(dt dtype.DType, dims []int, keepdim bool) *Tensor {
	return Apply1("prod", []*Tensor{t}, reduceAttrs(dims, keepdim).With("dtype", dt))
}

// Mean returns the mean over dims (torch.mean). The input must be floating
// point; use MeanAs for integers.
func (t *Tensor) Mean(dims []int, keepdim bool) *Tensor {
	return Apply1("mean", []*Tensor{t}, reduceAttrs(dims, keepdim))
}

// MeanAll returns the mean of all elements as a 0-d tensor.
func (t *Tensor) MeanAll() *Tensor { return t.Mean(nil, false) }

// MeanAs returns the mean over dims computed in floating dtype dt
// (torch.mean(dtype=dt)).
func (t *Tensor) MeanAs(dt dtype.DType, dims []int, keepdim bool) *Tensor {
	return Apply1("mean", []*Tensor{t}, reduceAttrs(dims, keepdim).With("dtype", dt))
}

// Amax returns the maximum over dims, propagating NaN (torch.amax).
func (t *Tensor) Amax(dims []int, keepdim bool) *Tensor {
	return Apply1("amax", []*Tensor{t}, reduceAttrs(dims, keepdim))
}

// Amin returns the minimum over dims, propagating NaN (torch.amin).
func (t *Tensor) Amin(dims []int, keepdim bool) *Tensor {
	return Apply1("amin", []*Tensor{t}, reduceAttrs(dims, keepdim))
}

// Max returns the maximum of all elements as a 0-d tensor (torch.max(t)).
func (t *Tensor) Max() *Tensor { return Apply1("max", []*Tensor{t}, nil) }

// Min returns the minimum of all elements as a 0-d tensor (torch.min(t)).
func (t *Tensor) Min() *Tensor { return Apply1("min", []*Tensor{t}, nil) }

// MaxDim returns the maximum along dim and the index of its first occurrence
// (torch.max(t, dim, keepdim)); a NaN is the maximum.
func (t *Tensor) MaxDim(dim int, keepdim bool) (values, indices *Tensor) {
	r := Apply("max_dim", []*Tensor{t}, op.Attrs{"dim": dim, "keepdim": keepdim})
	return r[0], r[1]
}

// MinDim returns the minimum along dim and the index of its first occurrence
// (torch.min(t, dim, keepdim)); a NaN is the minimum.
func (t *Tensor) MinDim(dim int, keepdim bool) (values, indices *Tensor) {
	r := Apply("min_dim", []*Tensor{t}, op.Attrs{"dim": dim, "keepdim": keepdim})
	return r[0], r[1]
}

// Argmax returns the int64 index of the first maximum along dim (torch.argmax).
func (t *Tensor) Argmax(dim int, keepdim bool) *Tensor {
	return Apply1("argmax", []*Tensor{t}, op.Attrs{"dim": dim, "keepdim": keepdim})
}

// ArgmaxAll returns the index of the first maximum of the flattened tensor.
func (t *Tensor) ArgmaxAll() *Tensor { return Apply1("argmax", []*Tensor{t}, nil) }

// Argmin returns the int64 index of the first minimum along dim (torch.argmin).
func (t *Tensor) Argmin(dim int, keepdim bool) *Tensor {
	return Apply1("argmin", []*Tensor{t}, op.Attrs{"dim": dim, "keepdim": keepdim})
}

// ArgminAll returns the index of the first minimum of the flattened tensor.
func (t *Tensor) ArgminAll() *Tensor { return Apply1("argmin", []*Tensor{t}, nil) }

// Aminmax returns the minimum and maximum of all elements (torch.aminmax).
func (t *Tensor) Aminmax() (minimum, maximum *Tensor) {
	r := Apply("aminmax", []*Tensor{t}, nil)
	return r[0], r[1]
}

// AminmaxDim returns the minimum and maximum along dim (torch.aminmax(dim=)).
func (t *Tensor) AminmaxDim(dim int, keepdim bool) (minimum, maximum *Tensor) {
	r := Apply("aminmax", []*Tensor{t}, op.Attrs{"dim": dim, "keepdim": keepdim})
	return r[0], r[1]
}

func varAttrs(dims []int, correction float64, keepdim bool) op.Attrs {
	return reduceAttrs(dims, keepdim).With("correction", correction)
}

// Var returns the variance over dims with the given correction (1 for the
// unbiased estimate, 0 for the population variance) (torch.var).
func (t *Tensor) Var(dims []int, correction float64, keepdim bool) *Tensor {
	return Apply1("var", []*Tensor{t}, varAttrs(dims, correction, keepdim))
}

// Std returns the standard deviation over dims with the given correction
// (torch.std).
func (t *Tensor) Std(dims []int, correction float64, keepdim bool) *Tensor {
	return Apply1("std", []*Tensor{t}, varAttrs(dims, correction, keepdim))
}

// VarMean returns the variance and the mean over dims (torch.var_mean).
func (t *Tensor) VarMean(dims []int, correction float64, keepdim bool) (variance, mean *Tensor) {
	r := Apply("var_mean", []*Tensor{t}, varAttrs(dims, correction, keepdim))
	return r[0], r[1]
}

// StdMean returns the standard deviation and the mean over dims (torch.std_mean).
func (t *Tensor) StdMean(dims []int, correction float64, keepdim bool) (std, mean *Tensor) {
	r := Apply("std_mean", []*Tensor{t}, varAttrs(dims, correction, keepdim))
	return r[0], r[1]
}

// Norm returns the p-norm over dims (torch.norm): p = 2 (the Frobenius norm
// for matrices), 1, math.Inf(1) (max |x|), math.Inf(-1) (min |x|), 0 (the
// number of nonzeros) or any other p ((sum |x|^p)^(1/p)).
func (t *Tensor) Norm(p float64, dims []int, keepdim bool) *Tensor {
	return Apply1("norm", []*Tensor{t}, reduceAttrs(dims, keepdim).With("p", p))
}

// NormAs is Norm computed in floating dtype dt (torch.norm(dtype=dt)).
func (t *Tensor) NormAs(dt dtype.DType, p float64, dims []int, keepdim bool) *Tensor {
	return Apply1("norm", []*Tensor{t}, reduceAttrs(dims, keepdim).With("p", p).With("dtype", dt))
}

// Logsumexp returns log(sum(exp(t))) over dims, computed stably
// (torch.logsumexp); integers promote to the default float.
func (t *Tensor) Logsumexp(dims []int, keepdim bool) *Tensor {
	return Apply1("logsumexp", []*Tensor{t}, reduceAttrs(dims, keepdim))
}

// Softmax returns softmax along dim (torch.softmax).
func (t *Tensor) Softmax(dim int) *Tensor {
	return Apply1("softmax", []*Tensor{t}, op.Attrs{"dim": dim})
}

// SoftmaxAs returns softmax along dim of t converted to dt first
// (torch.softmax(dtype=dt)).
func (t *Tensor) SoftmaxAs(dim int, dt dtype.DType) *Tensor {
	return Apply1("softmax", []*Tensor{t}, op.Attrs{"dim": dim, "dtype": dt})
}

// LogSoftmax returns log_softmax along dim (torch.log_softmax).
func (t *Tensor) LogSoftmax(dim int) *Tensor {
	return Apply1("log_softmax", []*Tensor{t}, op.Attrs{"dim": dim})
}

// LogSoftmaxAs returns log_softmax along dim of t converted to dt first.
func (t *Tensor) LogSoftmaxAs(dim int, dt dtype.DType) *Tensor {
	return Apply1("log_softmax", []*Tensor{t}, op.Attrs{"dim": dim, "dtype": dt})
}

// Softmax returns softmax of t along dim (torch.softmax).
func Softmax(t *Tensor, dim int) *Tensor { return t.Softmax(dim) }

// LogSoftmax returns log_softmax of t along dim (torch.log_softmax).
func LogSoftmax(t *Tensor, dim int) *Tensor { return t.LogSoftmax(dim) }

// Cumsum returns the cumulative sum along dim (torch.cumsum); integer and
// bool inputs give int64.
func (t *Tensor) Cumsum(dim int) *Tensor {
	return Apply1("cumsum", []*Tensor{t}, op.Attrs{"dim": dim})
}

// CumsumAs returns the cumulative sum along dim computed in dtype dt.
func (t *Tensor) CumsumAs(dim int, dt dtype.DType) *Tensor {
	return Apply1("cumsum", []*Tensor{t}, op.Attrs{"dim": dim, "dtype": dt})
}

// Cumprod returns the cumulative product along dim (torch.cumprod); integer
// and bool inputs give int64.
func (t *Tensor) Cumprod(dim int) *Tensor {
	return Apply1("cumprod", []*Tensor{t}, op.Attrs{"dim": dim})
}

// CumprodAs returns the cumulative product along dim computed in dtype dt.
func (t *Tensor) CumprodAs(dim int, dt dtype.DType) *Tensor {
	return Apply1("cumprod", []*Tensor{t}, op.Attrs{"dim": dim, "dtype": dt})
}

// All reports whether every element over dims is nonzero (torch.all): a
// bool tensor (uint8 for uint8 input).
func (t *Tensor) All(dims []int, keepdim bool) *Tensor {
	return Apply1("all", []*Tensor{t}, reduceAttrs(dims, keepdim))
}

// Any reports whether any element over dims is nonzero (torch.any): a bool
// tensor (uint8 for uint8 input).
func (t *Tensor) Any(dims []int, keepdim bool) *Tensor {
	return Apply1("any", []*Tensor{t}, reduceAttrs(dims, keepdim))
}

// CountNonzero returns the number of nonzero elements over dims (all when
// none are given) as int64 (torch.count_nonzero).
func (t *Tensor) CountNonzero(dims ...int) *Tensor {
	return Apply1("count_nonzero", []*Tensor{t}, op.Attrs{"dims": dimsAttr(dims)})
}

// Sort sorts along dim, returning the values and their int64 indices in the
// input (torch.sort). The sort is stable; NaN sorts as the largest value.
func (t *Tensor) Sort(dim int, descending bool) (values, indices *Tensor) {
	r := Apply("sort", []*Tensor{t}, op.Attrs{"dim": dim, "descending": descending, "stable": true})
	return r[0], r[1]
}

// Argsort returns the indices that sort t along dim (torch.argsort, stable).
func (t *Tensor) Argsort(dim int, descending bool) *Tensor {
	return Apply1("argsort", []*Tensor{t}, op.Attrs{"dim": dim, "descending": descending, "stable": true})
}

// Topk returns the k largest (or, with largest false, smallest) elements
// along dim and their indices (torch.topk). Results are always in sorted
// order; sorted is accepted for PyTorch parity.
func (t *Tensor) Topk(k, dim int, largest, sorted bool) (values, indices *Tensor) {
	r := Apply("topk", []*Tensor{t}, op.Attrs{"k": k, "dim": dim, "largest": largest, "sorted": sorted})
	return r[0], r[1]
}

// Topk returns the k largest (or smallest) elements of t along dim and their
// indices (torch.topk).
func Topk(t *Tensor, k, dim int, largest, sorted bool) (values, indices *Tensor) {
	return t.Topk(k, dim, largest, sorted)
}

// Cummax returns the running maximum along dim and the index where it was
// last attained (torch.cummax); NaN propagates.
func (t *Tensor) Cummax(dim int) (values, indices *Tensor) {
	r := Apply("cummax", []*Tensor{t}, op.Attrs{"dim": dim})
	return r[0], r[1]
}

// Cummin returns the running minimum along dim and the index where it was
// last attained (torch.cummin); NaN propagates.
func (t *Tensor) Cummin(dim int) (values, indices *Tensor) {
	r := Apply("cummin", []*Tensor{t}, op.Attrs{"dim": dim})
	return r[0], r[1]
}

// Median returns the lower median of all elements as a 0-d tensor
// (torch.median); NaN if any element is NaN.
func (t *Tensor) Median() *Tensor { return Apply1("median", []*Tensor{t}, nil) }

// MedianDim returns the lower median along dim and its index
// (torch.median(t, dim, keepdim)); a lane holding NaN gives NaN and the
// index of its first NaN.
func (t *Tensor) MedianDim(dim int, keepdim bool) (values, indices *Tensor) {
	r := Apply("median_dim", []*Tensor{t}, op.Attrs{"dim": dim, "keepdim": keepdim})
	return r[0], r[1]
}
