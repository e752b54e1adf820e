package vec

import "math"

// Row kernels of the fused softmax and norm ops, composed of the slice
// kernels with PyTorch's vectorized kernels' arithmetic: the CPU
// backend's softmax, log_softmax, layer_norm and rms_norm kernels, the
// compiled bf16 chains and attention run them row by row.

// SoftmaxRow sets y to softmax(x) as PyTorch's vectorized last-dim
// kernel: m = max(x), e = exp(x - m), y = e * (1/sum(e)), sum pairwise
// (Sum). y must not alias x. A NaN anywhere gives a NaN row.
func (k *Kernels) SoftmaxRow(y, x []float32) {
	m := k.Max(x)
	k.AddScalar(y, x, -m)
	k.Exp(y, y)
	s := k.Sum(y)
	k.MulScalar(y, y, 1/s)
}

// SoftmaxPrefix is SoftmaxRow(y, x) for a row whose elements from n on
// are -Inf, without computing their exponentials: each is exp(-Inf - m) =
// +0 for a finite max m, so they are written as zeros, which leaves every
// lane of Sum's sum, and so every bit of the result, as the whole row
// gives. (The exponential of a large negative argument underflows
// through subnormal intermediates, which Intel cores run as microcode
// assists: a decode step's attention row over a KV cache mostly unwritten
// spent most of its time there.) A non-finite max (every element -Inf, a
// NaN or +Inf among the first n) takes the whole-row path.
func (k *Kernels) SoftmaxPrefix(y, x []float32, n int) {
	if n <= 0 || n >= len(x) {
		k.SoftmaxRow(y, x)
		return
	}
	m := k.Max(x[:n])
	if m-m != 0 {
		k.SoftmaxRow(y, x)
		return
	}
	yn := y[:n]
	k.AddScalar(yn, x[:n], -m)
	k.Exp(yn, yn)
	clear(y[n:])
	s := k.Sum(y)
	k.MulScalar(yn, yn, 1/s)
}

// LogSoftmaxRow sets y to log_softmax(x) as PyTorch's vectorized
// kernel: (x - m) - log(sum(exp(x - m))). y must not alias x.
func (k *Kernels) LogSoftmaxRow(y, x []float32) {
	m := k.Max(x)
	k.AddScalar(y, x, -m)
	k.Exp(y, y)
	ls := float32(math.Log(float64(k.Sum(y))))
	k.AddScalar(y, x, -m)
	k.AddScalar(y, y, -ls)
}

// LayerNormRow sets y to (x - mean)*rstd*w + b (w, b nil when absent),
// mean and the biased variance as float32 pairwise sums, rstd =
// 1/sqrt(var + eps) rounded once from float64; the last step is one FMA
// per element. y must not alias x; tmp is scratch of len(x).
func (k *Kernels) LayerNormRow(y, x, w, b, tmp []float32, eps float64) {
	n := float32(len(x))
	mean := k.Sum(x) / n
	k.AddScalar(y, x, -mean)
	k.Mul(tmp, y, y)
	v := k.Sum(tmp) / n
	rstd := float32(1 / math.Sqrt(float64(v)+eps))
	k.MulScalar(y, y, rstd)
	switch {
	case w != nil && b != nil:
		k.Fma(y, y, w, b)
	case w != nil:
		k.Mul(y, y, w)
	case b != nil:
		k.Add(y, y, b)
	}
}

// RMSNormRow sets y to x * rsqrt(mean(x²) + eps) * w (w nil when
// absent), the mean a float32 pairwise sum. tmp is scratch of len(x); y may
// alias x.
func (k *Kernels) RMSNormRow(y, x, w, tmp []float32, eps float64) {
	k.Mul(tmp, x, x)
	ms := k.Sum(tmp) / float32(len(x))
	r := float32(1 / math.Sqrt(float64(ms+float32(eps))))
	k.MulScalar(y, x, r)
	if w != nil {
		k.Mul(y, y, w)
	}
}
