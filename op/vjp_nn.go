package op

import (
	"slices"

	"github.com/gotpu/gotpu/dtype"
)

// Gradients of nn composites whose decompositions would be slow or
// numerically poorer to differentiate op by op: the normalisations
// (layer_norm, which also has a direct kernel that cannot be differentiated
// through, rms_norm, group_norm, batch_norm), the class-index losses
// (nll_loss, cross_entropy: softmax minus the weighted target distribution,
// without materialising log_softmax's graph) and embedding (rows of the
// gradient added into zeros). Each equals the gradient of its op's
// decomposition (PyTorch 1.13's native_layer_norm_backward,
// native_batch_norm_backward, nll_loss_backward, embedding_backward).
// dropout and scaled_dot_product_attention are differentiated through their
// decompositions (dropout's records the mask multiply, so the mask is reused).

func init() {
	DefVJP(LayerNorm, layerNormVJP)
	DefVJP(RmsNorm, rmsNormVJP)
	DefVJP(GroupNorm, groupNormVJP)
	DefVJP(BatchNorm, batchNormVJP)
	DefVJP(NllLoss, func(b Builder, in, out, g []Value, a Attrs) []Value {
		x, t, w := in[0], in[1], in[2]
		gx, gw := nnIndexLossGrad(b, x, t, w, a.Int("ignore_index"), a.String("reduction"), 0, g[0], out[0], NeedsGrad(b, 2))
		return []Value{gx, nil, gw}
	})
	DefVJP(CrossEntropy, crossEntropyVJP)
	DefVJP(Embedding, embeddingVJP)
	DefVJP(BinaryCrossEntropy, bceVJP)
}

// bceVJP is PyTorch's binary_cross_entropy_backward: the input gets
// g * (x - t) / max(x (1 - x), 1e-12) * weight (finite where the clamped
// logs of the forward saturate), the target g * -logit(x) * weight, and the
// weight g times the unweighted loss.
func bceVJP(b Builder, in, out, g []Value, a Attrs) []Value {
	x, t, w := in[0], in[1], in[2]
	shape := b.Meta(x).Shape
	gl := g[0]
	switch a.String("reduction") {
	case "sum":
		gl = nnExpand(b, gl, shape)
	case "mean":
		gl = nnExpand(b, nnCall(b, "div", nil, gl, b.Scalar(float64(Numel(shape)), gl)), shape)
	}
	omx := nnCall(b, "sub", nil, b.Scalar(1.0, x), x)
	den := nnCall(b, "clamp", Attrs{"min": 1e-12}, nnCall(b, "mul", nil, x, omx))
	gx := nnCall(b, "div", nil, nnCall(b, "mul", nil, gl, nnCall(b, "sub", nil, x, t)), den)
	var gt, gw Value
	if NeedsGrad(b, 1) {
		gt = nnCall(b, "mul", nil, gl, nnCall(b, "neg", nil, nnCall(b, "log", nil, nnCall(b, "div", nil, x, omx))))
	}
	if w != nil {
		gx = nnCall(b, "mul", nil, gx, w)
		if gt != nil {
			gt = nnCall(b, "mul", nil, gt, w)
		}
	}
	if w != nil && NeedsGrad(b, 2) {
		lx := nnCall(b, "clamp", Attrs{"min": -100.0}, nnCall(b, "log", nil, x))
		l1x := nnCall(b, "clamp", Attrs{"min": -100.0}, nnCall(b, "log", nil, omx))
		omt := nnCall(b, "sub", nil, b.Scalar(1.0, t), t)
		loss := nnCall(b, "neg", nil, nnCall(b, "add", nil, nnCall(b, "mul", nil, t, lx), nnCall(b, "mul", nil, omt, l1x)))
		gw = SumToShape(b, nnCall(b, "mul", nil, gl, loss), b.Meta(w).Shape)
	}
	return []Value{gx, gt, gw}
}

// nnSumDims sums v over dims; no dims leaves v as it is (an empty dims
// attribute would mean every axis).
func nnSumDims(b Builder, v Value, dims []int) Value {
	if len(dims) == 0 {
		return v
	}
	return nnCall(b, "sum", Attrs{"dims": slices.Clone(dims)}, v)
}

func nnMeanKeep(b Builder, v Value, dims []int) Value {
	return nnCall(b, "mean", Attrs{"dims": slices.Clone(dims), "keepdim": true}, v)
}

// nnStats returns xhat = (x - mean) * rstd and rstd over dims (keepdim), as
// nnNormalize computes them.
func nnStats(b Builder, x Value, dims []int, eps float64) (xhat, rstd Value) {
	mean := nnMeanKeep(b, x, dims)
	xc := nnCall(b, "sub", nil, x, mean)
	v := nnMeanKeep(b, nnCall(b, "mul", nil, xc, xc), dims)
	rstd = nnCall(b, "rsqrt", nil, nnCall(b, "add", nil, v, b.Scalar(eps, v)))
	return nnCall(b, "mul", nil, xc, rstd), rstd
}

// nnNormBackward is the input gradient of xhat = (x - mean) * rstd over
// dims given the gradient gxhat of xhat:
// rstd * (gxhat - mean(gxhat) - xhat * mean(gxhat * xhat)).
func nnNormBackward(b Builder, gxhat, xhat, rstd Value, dims []int) Value {
	m1 := nnMeanKeep(b, gxhat, dims)
	m2 := nnMeanKeep(b, nnCall(b, "mul", nil, gxhat, xhat), dims)
	d := nnCall(b, "sub", nil, nnCall(b, "sub", nil, gxhat, m1), nnCall(b, "mul", nil, xhat, m2))
	return nnCall(b, "mul", nil, rstd, d)
}

func nnIotaTo(lo, hi int) []int { return laIota(lo, hi) }

// nnExpand broadcasts v to shape unless it already has it.
func nnExpand(b Builder, v Value, shape []int) Value {
	if slices.Equal(b.Meta(v).Shape, shape) {
		return v
	}
	return nnCall(b, "expand", Attrs{"shape": slices.Clone(shape)}, v)
}

func layerNormVJP(b Builder, in, out, g []Value, a Attrs) []Value {
	x, w, bias := in[0], in[1], in[2]
	xm := b.Meta(x)
	ns := a.Ints("normalized_shape")
	r := len(xm.Shape)
	dims := nnLastDims(r, len(ns))
	lead := nnIotaTo(0, r-len(ns))
	xo, gy := nnOpmath(b, x), nnOpmath(b, g[0])
	xhat, rstd := nnStats(b, xo, dims, a.Float("eps"))
	var gx, gw, gb Value
	gxhat := gy
	if w != nil {
		if NeedsGrad(b, 1) {
			gw = nnSumDims(b, nnCall(b, "mul", nil, gy, xhat), lead)
		}
		gxhat = nnCall(b, "mul", nil, gy, nnReshape(b, nnOpmath(b, w), ns))
	}
	if bias != nil && NeedsGrad(b, 2) {
		gb = nnSumDims(b, gy, lead)
	}
	if NeedsGrad(b, 0) {
		gx = nnConvert(b, nnNormBackward(b, gxhat, xhat, rstd, dims), xm.DType)
	}
	return []Value{gx, gw, gb}
}

// rmsNormVJP: with rr = rsqrt(mean(x²) + eps) and gxhat = g * weight,
// dx = rr * gxhat - x * rr³ * mean(gxhat * x).
func rmsNormVJP(b Builder, in, out, g []Value, a Attrs) []Value {
	x, w := in[0], in[1]
	xm := b.Meta(x)
	ns := a.Ints("normalized_shape")
	r := len(xm.Shape)
	dims := nnLastDims(r, len(ns))
	eps := nnMachineEps(xm.DType)
	if a.Has("eps") {
		eps = a.Float("eps")
	}
	xo, gy := nnOpmath(b, x), nnOpmath(b, g[0])
	ms := nnMeanKeep(b, nnCall(b, "mul", nil, xo, xo), dims)
	rr := nnCall(b, "rsqrt", nil, nnCall(b, "add", nil, ms, b.Scalar(eps, ms)))
	var gw Value
	gxhat := gy
	if w != nil {
		gw = nnSumDims(b, nnCall(b, "mul", nil, gy, nnCall(b, "mul", nil, xo, rr)), nnIotaTo(0, r-len(ns)))
		gxhat = nnCall(b, "mul", nil, gy, nnReshape(b, nnOpmath(b, w), ns))
	}
	m := nnMeanKeep(b, nnCall(b, "mul", nil, gxhat, xo), dims)
	rr3 := nnCall(b, "mul", nil, rr, nnCall(b, "mul", nil, rr, rr))
	gx := nnCall(b, "sub", nil, nnCall(b, "mul", nil, rr, gxhat), nnCall(b, "mul", nil, xo, nnCall(b, "mul", nil, rr3, m)))
	return []Value{nnConvert(b, gx, xm.DType), gw}
}

// nnChannelDims are the axes of an [N, C, *] tensor other than channels.
func nnChannelDims(r int) []int {
	dims := []int{0}
	for i := 2; i < r; i++ {
		dims = append(dims, i)
	}
	return dims
}

func groupNormVJP(b Builder, in, out, g []Value, a Attrs) []Value {
	x, w, bias := in[0], in[1], in[2]
	xm := b.Meta(x)
	r := len(xm.Shape)
	n, c, ng := xm.Shape[0], xm.Shape[1], a.Int("num_groups")
	grouped := []int{n, ng, Numel(xm.Shape[1:]) / max(ng, 1)}
	cs := nnChannelShape(c, r)
	xo, gy := nnOpmath(b, x), nnOpmath(b, g[0])
	xhatg, rstd := nnStats(b, nnReshape(b, xo, grouped), []int{2}, a.Float("eps"))
	xhat := nnReshape(b, xhatg, xm.Shape)
	var gw, gb Value
	gxhat := gy
	cdims := nnChannelDims(r)
	if w != nil {
		gw = nnSumDims(b, nnCall(b, "mul", nil, gy, xhat), cdims)
		gxhat = nnCall(b, "mul", nil, gy, nnReshape(b, nnOpmath(b, w), cs))
	}
	if bias != nil {
		gb = nnSumDims(b, gy, cdims)
	}
	gx := nnNormBackward(b, nnReshape(b, gxhat, grouped), xhatg, rstd, []int{2})
	return []Value{nnConvert(b, nnReshape(b, gx, xm.Shape), xm.DType), gw, gb}
}

// batchNormVJP: with batch statistics (training, or no running stats) the
// normalisation is differentiated as layer_norm's over the non-channel axes;
// with running statistics it is affine in the input, and the running mean
// and variance get the gradients of (x - mean) * rsqrt(var + eps).
func batchNormVJP(b Builder, in, out, g []Value, a Attrs) []Value {
	x, rm, rv, w, bias := in[0], in[1], in[2], in[3], in[4]
	xm := b.Meta(x)
	r := len(xm.Shape)
	cs := nnChannelShape(xm.Shape[1], r)
	dims := nnChannelDims(r)
	xo, gy := nnOpmath(b, x), nnOpmath(b, g[0])
	eps := a.Float("eps")
	training := a.Bool("training") || rm == nil
	var xhat, rstd, xc Value
	if training {
		xhat, rstd = nnStats(b, xo, dims, eps)
	} else {
		v := nnReshape(b, nnOpmath(b, rv), cs)
		rstd = nnCall(b, "rsqrt", nil, nnCall(b, "add", nil, v, b.Scalar(eps, v)))
		xc = nnCall(b, "sub", nil, xo, nnReshape(b, nnOpmath(b, rm), cs))
		xhat = nnCall(b, "mul", nil, xc, rstd)
	}
	var gw, gb, grm, grv Value
	gxhat := gy
	if w != nil {
		gw = nnSumDims(b, nnCall(b, "mul", nil, gy, xhat), dims)
		gxhat = nnCall(b, "mul", nil, gy, nnReshape(b, nnOpmath(b, w), cs))
	}
	if bias != nil {
		gb = nnSumDims(b, gy, dims)
	}
	var gx Value
	if training {
		gx = nnNormBackward(b, gxhat, xhat, rstd, dims)
	} else {
		gx = nnCall(b, "mul", nil, gxhat, rstd)
		grm = nnCall(b, "neg", nil, nnSumDims(b, gx, dims))
		// d/dvar (var + eps)^-1/2 = -rstd³/2.
		r3 := nnCall(b, "mul", nil, rstd, nnCall(b, "mul", nil, rstd, rstd))
		t := nnCall(b, "mul", nil, nnCall(b, "mul", nil, gxhat, xc), r3)
		grv = nnCall(b, "mul", nil, nnSumDims(b, t, dims), b.Scalar(-0.5, t))
	}
	return []Value{nnConvert(b, gx, xm.DType), grm, grv, gw, gb}
}

// nnClassIota is 0..C-1 laid along the class axis of a rank-r tensor (axis
// 1, or 0 for r == 1) for broadcasting.
func nnClassIota(b Builder, c, r int) Value {
	cls := nnCall(b, "iota", Attrs{"shape": []int{c}, "dim": 0, "dtype": dtype.I64})
	if r > 1 {
		cls = nnReshape(b, cls, nnChannelShape(c, r))
	}
	return cls
}

// nnIndexLossGrad is the gradient of a class-index loss with respect to the
// log-probabilities logp [N, C, d...] (or [C]) and the class weights w:
// nll_loss (ls = 0) or cross_entropy's loss after log_softmax with label
// smoothing ls. Per sample n with target t_n (not ignored),
// loss_n = -(1-ls) w[t_n] logp[n, t_n] - ls/C sum_c w_c logp[n, c]; mean
// divides the sum by sum_n w[t_n] over the kept samples. out is the loss.
func nnIndexLossGrad(b Builder, logp, t, w Value, ignore int, red string, ls float64, gy, out Value, wantW bool) (glogp, gw Value) {
	xm := b.Meta(logp)
	r := len(xm.Shape)
	cdim := min(1, r-1)
	c := xm.Shape[cdim]
	dt := xm.DType
	keep := nnCall(b, "ne", nil, t, b.Scalar(int64(ignore), t))
	safe := nnConvert(b, nnCall(b, "where", nil, keep, t, b.Scalar(int64(0), t)), dtype.I64)
	onehot := nnCall(b, "eq", nil, nnCall(b, "unsqueeze", Attrs{"dim": cdim}, safe), nnClassIota(b, c, r))
	var wt Value // weight of each sample's target, 0 where ignored
	if w != nil {
		wt = nnTargetWeights(b, t, w, ignore)
	} else {
		wt = nnConvert(b, keep, dt)
	}
	tshape := b.Meta(t).Shape
	gl := gy // d out / d loss_n
	switch red {
	case "sum":
		gl = nnExpand(b, gy, tshape)
	case "mean":
		den := nnCall(b, "sum", Attrs{"dims": []int{}}, wt)
		gl = nnExpand(b, nnCall(b, "div", nil, gy, den), tshape)
	}
	// Ignored samples get nothing (also when every sample is ignored and the
	// mean is 0/0, as PyTorch).
	gl = nnCall(b, "where", nil, keep, gl, b.Scalar(0.0, gl))
	glu := nnCall(b, "unsqueeze", Attrs{"dim": cdim}, gl)
	zero := b.Scalar(0.0, glu)
	// q[n, c] = (1-ls) w[t_n] [c == t_n] + ls/C w_c; glogp = -gl * q.
	q := nnCall(b, "where", nil, onehot, nnCall(b, "unsqueeze", Attrs{"dim": cdim}, nnCall(b, "mul", nil, wt, b.Scalar(1-ls, wt))), zero)
	var wc Value
	if w != nil {
		wc = nnConvert(b, w, dt)
		if r > 1 {
			wc = nnReshape(b, wc, nnChannelShape(c, r))
		}
	}
	if ls > 0 {
		var sm Value = b.Scalar(ls/float64(c), q)
		if wc != nil {
			sm = nnCall(b, "mul", nil, wc, sm)
		}
		q = nnCall(b, "add", nil, q, sm)
	}
	glogp = nnCall(b, "neg", nil, nnCall(b, "mul", nil, glu, q))
	if w != nil && wantW {
		// d loss_n / d w_c = -(1-ls) logp[n, t_n] [c == t_n] - ls/C logp[n, c],
		// and the mean's denominator adds -out [c == t_n] per kept sample.
		picked := nnCall(b, "sum", Attrs{"dims": []int{cdim}, "keepdim": true}, nnCall(b, "where", nil, onehot, logp, zero))
		e := nnCall(b, "mul", nil, picked, b.Scalar(-(1-ls), picked))
		if red == "mean" {
			e = nnCall(b, "sub", nil, e, out)
		}
		e = nnCall(b, "where", nil, onehot, e, zero)
		if ls > 0 {
			e = nnCall(b, "sub", nil, e, nnCall(b, "mul", nil, logp, b.Scalar(ls/float64(c), logp)))
		}
		e = nnCall(b, "mul", nil, glu, e)
		gw = nnSumDims(b, e, nnOtherDims(r, cdim))
	}
	return glogp, gw
}

// nnOtherDims lists the axes of a rank-r tensor other than cdim.
func nnOtherDims(r, cdim int) []int {
	var d []int
	for i := 0; i < r; i++ {
		if i != cdim {
			d = append(d, i)
		}
	}
	return d
}

// crossEntropyVJP: with p = softmax(input) and the weighted target
// distribution q of each sample, d loss / d input = gl * (p * sum_c q - q);
// probability targets also get the gradient -gl * (1-ls) * w * log p.
func crossEntropyVJP(b Builder, in, out, g []Value, a Attrs) []Value {
	x, t, w := in[0], in[1], in[2]
	xm := b.Meta(x)
	r := len(xm.Shape)
	cdim := min(1, r-1)
	c := xm.Shape[cdim]
	ls := a.Float("label_smoothing")
	red := a.String("reduction")
	logp := nnCall(b, "log_softmax", Attrs{"dim": cdim}, x)
	p := nnCall(b, "exp", nil, logp)
	softmaxBack := func(glogp Value) Value {
		s := nnCall(b, "sum", Attrs{"dims": []int{cdim}, "keepdim": true}, glogp)
		return nnCall(b, "sub", nil, glogp, nnCall(b, "mul", nil, p, s))
	}
	if !b.Meta(t).DType.IsFloat() {
		glogp, gw := nnIndexLossGrad(b, logp, t, w, a.Int("ignore_index"), red, ls, g[0], out[0], NeedsGrad(b, 2))
		return []Value{softmaxBack(glogp), nil, gw}
	}
	// Probability targets: loss_n = -sum_c logp * t' * w_c with
	// t' = (1-ls) t + ls/C; mean divides by the number of samples.
	gl := g[0]
	ns := slices.Clone(xm.Shape)
	if r > 1 {
		ns = append(ns[:1], ns[2:]...)
	} else {
		ns = []int{}
	}
	switch red {
	case "sum":
		gl = nnExpand(b, gl, ns)
	case "mean":
		if r > 1 {
			n := Numel(xm.Shape) / max(c, 1)
			gl = nnCall(b, "div", nil, gl, b.Scalar(float64(n), gl))
		}
		gl = nnExpand(b, gl, ns)
	}
	glu := nnCall(b, "unsqueeze", Attrs{"dim": cdim}, gl)
	var wc Value
	if w != nil {
		wc = nnConvert(b, w, xm.DType)
		if r > 1 {
			wc = nnReshape(b, wc, nnChannelShape(c, r))
		}
	}
	tp := t
	if ls > 0 {
		tp = nnCall(b, "add", nil, nnCall(b, "mul", nil, t, b.Scalar(1-ls, t)), b.Scalar(ls/float64(c), t))
	}
	q := tp
	if wc != nil {
		q = nnCall(b, "mul", nil, q, wc)
	}
	gx := softmaxBack(nnCall(b, "neg", nil, nnCall(b, "mul", nil, glu, q)))
	var gt, gw Value
	if NeedsGrad(b, 1) {
		// d/dt = -gl * logp * w * (1-ls)
		lw := logp
		if wc != nil {
			lw = nnCall(b, "mul", nil, lw, wc)
		}
		gt = nnCall(b, "mul", nil, nnCall(b, "mul", nil, glu, lw), b.Scalar(-(1-ls), lw))
	}
	if w != nil && NeedsGrad(b, 2) {
		e := nnCall(b, "neg", nil, nnCall(b, "mul", nil, glu, nnCall(b, "mul", nil, logp, tp)))
		gw = nnSumDims(b, e, nnOtherDims(r, cdim))
	}
	return []Value{gx, gt, gw}
}

// embeddingVJP adds each looked-up row's gradient into zeros at its index;
// rows looked up at padding_idx get none (F.embedding's padding_idx).
func embeddingVJP(b Builder, in, out, g []Value, a Attrs) []Value {
	w, idx := in[0], in[1]
	wm, im := b.Meta(w), b.Meta(idx)
	n := Numel(im.Shape)
	flat := nnReshape(b, idx, []int{n})
	g2 := nnReshape(b, g[0], []int{n, wm.Shape[1]})
	if a.Has("padding_idx") {
		p := a.Int("padding_idx")
		if p < 0 {
			p += wm.Shape[0]
		}
		pad := nnCall(b, "unsqueeze", Attrs{"dim": 1}, nnCall(b, "eq", nil, flat, b.Scalar(int64(p), flat)))
		g2 = nnCall(b, "where", nil, pad, b.Scalar(0.0, g2), g2)
	}
	z := Zeros(b, wm.Shape, b.Meta(g2).DType)
	return []Value{nnCall(b, "index_add", Attrs{"dim": 0}, z, flat, g2), nil}
}
