package models

import (
	"fmt"
	"math"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/hf/config"
	"github.com/gotpu/gotpu/tensor"
)

// Rope is a rotary position embedding: the inverse frequencies of one
// attention kind, with transformers' scaling variants (linear, dynamic NTK,
// YaRN, Llama 3, LongRoPE) computed as transformers computes them
// (modeling_rope_utils), in f32.
type Rope struct {
	// Dim is the number of rotated features (the head dim).
	Dim int
	// Base is rope_theta.
	Base float64
	// Scaling is the scaling, nil for plain RoPE.
	Scaling *config.RopeScaling
	// MaxPositions is the model's max_position_embeddings.
	MaxPositions int
	// OrigMax is the pre-extension context length of dynamic and LongRoPE
	// scaling.
	OrigMax int
	// longropeFactor is max_position/original_max when the config states
	// the original length (transformers derives the factor from it).
	longropeFactor float64
	fixed          []float32 // inv_freq when it does not depend on the sequence length
	scale          float64   // attention scaling of cos and sin
	dev            device.Device
	cache          map[int]*tensor.Tensor // inv_freq by regime (dynamic, longrope)
}

func newRope(dev device.Device, dim int, base float64, rs *config.RopeScaling, maxPos int) (*Rope, error) {
	r := &Rope{Dim: dim, Base: base, Scaling: rs, MaxPositions: maxPos, scale: 1, dev: dev, cache: map[int]*tensor.Tensor{}}
	if rs == nil {
		r.fixed = plainInvFreq(dim, base)
		return r, nil
	}
	switch rs.Type {
	case config.RopeLinear:
		f := plainInvFreq(dim, base)
		for i := range f {
			f[i] = f[i] / float32(rs.Factor)
		}
		r.fixed = f
	case config.RopeDynamic:
		r.OrigMax = maxPos
	case config.RopeLlama3:
		r.fixed = llama3InvFreq(dim, base, rs)
	case config.RopeYaRN:
		f, scale := yarnInvFreq(dim, base, rs, maxPos)
		r.fixed, r.scale = f, scale
	case config.RopeLongRoPE:
		r.OrigMax = maxPos
		factor := rs.Factor
		if _, ok := rs.Raw["original_max_position_embeddings"]; ok || rs.OriginalMaxPositionEmbeddings > 0 && rs.OriginalMaxPositionEmbeddings != maxPos {
			r.OrigMax = rs.OriginalMaxPositionEmbeddings
			factor = float64(maxPos) / float64(r.OrigMax)
		}
		r.longropeFactor = factor
		if rs.AttentionFactor != nil {
			r.scale = *rs.AttentionFactor
		} else if factor > 1 {
			r.scale = math.Sqrt(1 + math.Log(factor)/math.Log(float64(r.OrigMax)))
		}
	default:
		return nil, fmt.Errorf("%w: rope type %q", ErrUnsupported, rs.Type)
	}
	return r, nil
}

// plainInvFreq is 1 / base^(2i/dim) in f32, as torch computes it.
func plainInvFreq(dim int, base float64) []float32 {
	out := make([]float32, dim/2)
	for i := range out {
		e := float32(2*i) / float32(dim)
		out[i] = float32(1 / float32(math.Pow(base, float64(e))))
	}
	return out
}

func llama3InvFreq(dim int, base float64, rs *config.RopeScaling) []float32 {
	f := plainInvFreq(dim, base)
	old := float64(rs.OriginalMaxPositionEmbeddings)
	lowWave := old / rs.LowFreqFactor
	highWave := old / rs.HighFreqFactor
	for i, v := range f {
		wave := 2 * math.Pi / float64(v)
		scaled := float64(v)
		if wave > lowWave {
			scaled = float64(v) / rs.Factor
		}
		if !(wave < highWave) && !(wave > lowWave) {
			smooth := (old/wave - rs.LowFreqFactor) / (rs.HighFreqFactor - rs.LowFreqFactor)
			scaled = (1-smooth)*scaled/rs.Factor + smooth*scaled
		}
		f[i] = float32(scaled)
	}
	return f
}

func yarnInvFreq(dim int, base float64, rs *config.RopeScaling, maxPos int) ([]float32, float64) {
	factor := rs.Factor
	orig := rs.OriginalMaxPositionEmbeddings
	if orig == 0 {
		orig = maxPos
	}
	if _, ok := rs.Raw["original_max_position_embeddings"]; ok && orig > 0 {
		factor = float64(maxPos) / float64(orig)
	}
	mscale := func(scale, m float64) float64 {
		if scale <= 1 {
			return 1
		}
		return 0.1*m*math.Log(scale) + 1
	}
	var attn float64
	switch {
	case rs.AttentionFactor != nil:
		attn = *rs.AttentionFactor
	case rs.MScale != nil && rs.MScaleAllDim != nil && *rs.MScale != 0 && *rs.MScaleAllDim != 0:
		attn = mscale(factor, *rs.MScale) / mscale(factor, *rs.MScaleAllDim)
	default:
		attn = mscale(factor, 1)
	}
	betaFast, betaSlow := rs.BetaFast, rs.BetaSlow
	if betaFast == 0 {
		betaFast = 32
	}
	if betaSlow == 0 {
		betaSlow = 1
	}
	corr := func(rot float64) float64 {
		return float64(dim) * math.Log(float64(orig)/(rot*2*math.Pi)) / (2 * math.Log(base))
	}
	low, high := corr(betaFast), corr(betaSlow)
	if rs.Truncate == nil || *rs.Truncate {
		low, high = math.Floor(low), math.Ceil(high)
	}
	low, high = math.Max(low, 0), math.Min(high, float64(dim-1))
	if low == high {
		high += 0.001
	}
	out := make([]float32, dim/2)
	for i := range out {
		e := float32(2*i) / float32(dim)
		pos := float32(math.Pow(base, float64(e)))
		extra := 1 / pos
		inter := 1 / (float32(factor) * pos)
		ramp := (float32(i) - float32(low)) / (float32(high) - float32(low))
		ramp = min(max(ramp, 0), 1)
		ef := 1 - ramp
		out[i] = inter*(1-ef) + extra*ef
	}
	return out, attn
}

// invFreq returns the inverse frequencies for a forward whose largest
// position is seqLen-1, as a device tensor.
func (r *Rope) invFreq(seqLen int) *tensor.Tensor {
	key := 0
	var f []float32
	switch {
	case r.fixed != nil:
		f = r.fixed
	case r.Scaling.Type == config.RopeDynamic:
		// transformers grows the base once the sequence passes the
		// trained length.
		n := max(seqLen, r.OrigMax)
		key = n
		if t, ok := r.cache[key]; ok {
			return t
		}
		fac := r.Scaling.Factor
		d := float64(r.Dim)
		base := r.Base * math.Pow(fac*float64(n)/float64(r.OrigMax)-(fac-1), d/(d-2))
		f = plainInvFreq(r.Dim, base)
	default: // longrope: long factors past the original length
		ext := r.Scaling.ShortFactor
		key = 1
		if seqLen > r.OrigMax {
			ext, key = r.Scaling.LongFactor, 2
		}
		if t, ok := r.cache[key]; ok {
			return t
		}
		f = make([]float32, r.Dim/2)
		for i := range f {
			e := float32(2*i) / float32(r.Dim)
			f[i] = 1 / (float32(ext[i]) * float32(math.Pow(r.Base, float64(e))))
		}
	}
	if t, ok := r.cache[key]; ok && key == 0 {
		return t
	}
	t := tensor.FromSlice(r.dev, f, len(f))
	r.cache[key] = t
	return t
}

// cosSin returns cos and sin [B, 1, T, Dim] for positions [B, T] (i64) and
// inverse frequencies inv, in dt, times the attention scaling.
func (r *Rope) cosSin(pos, inv *tensor.Tensor, dt dtype.DType) (cos, sin *tensor.Tensor) {
	p := pos.ToDType(dtype.F32).Unsqueeze(-1) // [B, T, 1]
	freqs := p.Mul(inv)                       // [B, T, Dim/2]
	emb := tensor.Cat([]*tensor.Tensor{freqs, freqs}, -1).Unsqueeze(1)
	cos, sin = emb.Cos(), emb.Sin()
	if r.scale != 1 {
		cos, sin = cos.MulScalar(r.scale), sin.MulScalar(r.scale)
	}
	return cos.ToDType(dt), sin.ToDType(dt)
}

// applyRope rotates x [B, H, T, D] by cos and sin [B, 1, T, D].
func applyRope(x, cos, sin *tensor.Tensor) *tensor.Tensor {
	h := x.Size(-1) / 2
	rot := tensor.Cat([]*tensor.Tensor{x.Narrow(-1, h, h).Neg(), x.Narrow(-1, 0, h)}, -1)
	return x.Mul(cos).Add(rot.Mul(sin))
}
