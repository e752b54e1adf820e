package nn

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/tensor"
)

func keysOf(m Module) []string {
	var out []string
	for _, p := range StateDict(m) {
		out = append(out, p.Name+":"+p.Tensor.DType().String()+strings.ReplaceAll(fmt.Sprint(p.Tensor.Shape()), " ", ","))
	}
	return out
}

// TestDefaultStateDicts pins the state-dict keys, dtypes and shapes of the
// default constructions against torch 1.13's (printed by
// {k: (v.dtype, v.shape) for k, v in m.state_dict().items()}).
func TestDefaultStateDicts(t *testing.T) {
	cases := []struct {
		name string
		m    Module
		want []string
	}{
		{"linear", NewLinear(cpu, 3, 2, true), []string{"weight:f32[2,3]", "bias:f32[2]"}},
		{"bilinear", NewBilinear(cpu, 2, 3, 4, false), []string{"weight:f32[4,2,3]"}},
		{"batchnorm", NewBatchNorm2d(cpu, 3, BatchNormOpts{}), []string{"weight:f32[3]", "bias:f32[3]", "running_mean:f32[3]", "running_var:f32[3]", "num_batches_tracked:i64[]"}},
		{"batchnorm_untracked", NewBatchNorm1d(cpu, 3, BatchNormOpts{NoTrackRunningStats: true, NoAffine: true}), nil},
		{"conv_transpose", NewConvTranspose2d(cpu, 4, 6, []int{3}, ConvOpts{Groups: 2}), []string{"weight:f32[4,3,3,3]", "bias:f32[6]"}},
		{"mha", NewMultiheadAttention(cpu, 8, 2, MultiheadAttentionOpts{AddBiasKV: true}),
			[]string{"in_proj_weight:f32[24,8]", "in_proj_bias:f32[24]", "bias_k:f32[1,1,8]", "bias_v:f32[1,1,8]", "out_proj.weight:f32[8,8]", "out_proj.bias:f32[8]"}},
		{"mha_kdim", NewMultiheadAttention(cpu, 4, 1, MultiheadAttentionOpts{KDim: 3, VDim: 2}),
			[]string{"q_proj_weight:f32[4,4]", "k_proj_weight:f32[4,3]", "v_proj_weight:f32[4,2]", "in_proj_bias:f32[12]", "out_proj.weight:f32[4,4]", "out_proj.bias:f32[4]"}},
		{"encoder_layer", NewTransformerEncoderLayer(cpu, 8, 2, TransformerEncoderLayerOpts{}), []string{
			"self_attn.in_proj_weight:f32[24,8]", "self_attn.in_proj_bias:f32[24]", "self_attn.out_proj.weight:f32[8,8]", "self_attn.out_proj.bias:f32[8]",
			"linear1.weight:f32[2048,8]", "linear1.bias:f32[2048]", "linear2.weight:f32[8,2048]", "linear2.bias:f32[8]",
			"norm1.weight:f32[8]", "norm1.bias:f32[8]", "norm2.weight:f32[8]", "norm2.bias:f32[8]"}},
		{"sequential", NewSequential(NewLinear(cpu, 2, 2, false), NewReLU(), NewLayerNorm(cpu, []int{2}, LayerNormOpts{})),
			[]string{"0.weight:f32[2,2]", "2.weight:f32[2]", "2.bias:f32[2]"}},
		{"f64", NewEmbedding(cpu, 5, 2, EmbeddingOpts{}, WithDType(dtype.F64)), []string{"weight:f64[5,2]"}},
	}
	for _, c := range cases {
		if got := keysOf(c.m); !slices.Equal(got, c.want) {
			t.Errorf("%s: state dict\n got %v\nwant %v", c.name, got, c.want)
		}
	}
}

func stats(v []float64) (mean, std, lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, x := range v {
		mean += x
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	mean /= float64(len(v))
	for _, x := range v {
		std += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(std / float64(len(v))), lo, hi
}

// TestDefaultInit checks torch's default initialisations: bounds that are
// reached, and the moments of the distributions.
func TestDefaultInit(t *testing.T) {
	tensor.ManualSeed(1)
	lin := NewLinear(cpu, 100, 300, true)
	conv := NewConv2d(cpu, 8, 1024, []int{3, 3}, ConvOpts{Groups: 2})
	convT := NewConvTranspose2d(cpu, 64, 8, []int{3, 3}, ConvOpts{})
	emb := NewEmbedding(cpu, 1000, 16, EmbeddingOpts{PaddingIdx: -1, HasPaddingIdx: true})
	mha := NewMultiheadAttention(cpu, 64, 4, MultiheadAttentionOpts{AddBiasKV: true})
	bil := NewBilinear(cpu, 25, 4, 300, true)
	type uni struct {
		name  string
		t     *tensor.Tensor
		bound float64
	}
	for _, u := range []uni{
		{"linear.weight", lin.Weight, 1 / math.Sqrt(100)}, {"linear.bias", lin.Bias, 1 / math.Sqrt(100)},
		{"conv.weight", conv.Weight, 1 / math.Sqrt(4*9)}, {"conv.bias", conv.Bias, 1 / math.Sqrt(4*9)},
		// A transposed weight is [in, out/groups, k]: fan_in = out/groups·k.
		{"conv_transpose.weight", convT.Weight, 1 / math.Sqrt(8*9)},
		{"mha.in_proj_weight", mha.InProjWeight, math.Sqrt(6.0 / (64 + 192))},
		{"mha.out_proj.weight", mha.OutProj.Weight, 1 / math.Sqrt(64)},
		{"bilinear.weight", bil.Weight, 1 / math.Sqrt(25)},
	} {
		mean, std, lo, hi := stats(u.t.Float64s())
		if lo < -u.bound || hi > u.bound || lo > -0.97*u.bound || hi < 0.97*u.bound {
			t.Errorf("%s: range [%v, %v], want U(±%v)", u.name, lo, hi, u.bound)
		}
		if math.Abs(mean) > 0.1*u.bound || math.Abs(std/(u.bound/math.Sqrt(3))-1) > 0.1 {
			t.Errorf("%s: mean %v std %v, want 0 and %v", u.name, mean, std, u.bound/math.Sqrt(3))
		}
	}
	mean, std, _, _ := stats(emb.Weight.Narrow(0, 0, 999).Float64s())
	if math.Abs(mean) > 0.05 || math.Abs(std-1) > 0.05 {
		t.Errorf("embedding: mean %v std %v, want N(0, 1)", mean, std)
	}
	for _, v := range emb.Weight.Select(0, 999).Float64s() {
		if v != 0 || emb.PaddingIdx != 999 {
			t.Fatalf("padding row %d not zero", emb.PaddingIdx)
		}
	}
	for _, z := range []*tensor.Tensor{mha.InProjBias, mha.OutProj.Bias} {
		if _, _, lo, hi := stats(z.Float64s()); lo != 0 || hi != 0 {
			t.Error("attention biases must start at zero")
		}
	}
	if _, std, _, _ := stats(mha.BiasK.Float64s()); std == 0 {
		t.Error("bias_k must be drawn (xavier_normal_)")
	}
	// The same generator seed gives the same module.
	a := NewLinear(cpu, 4, 4, true, WithGenerator(tensor.NewGenerator(9)))
	b := NewLinear(cpu, 4, 4, true, WithGenerator(tensor.NewGenerator(9)))
	if !slices.Equal(a.Weight.Float64s(), b.Weight.Float64s()) || !slices.Equal(a.Bias.Float64s(), b.Bias.Float64s()) {
		t.Error("WithGenerator: same seed, different weights")
	}
}

func TestDropoutTrainEval(t *testing.T) {
	d := NewDropout(0.25, WithGenerator(tensor.NewGenerator(5)))
	x := tensor.Ones(cpu, dtype.F32, 4000)
	y := d.Forward(x).Float64s()
	zeros := 0
	for _, v := range y {
		switch {
		case v == 0:
			zeros++
		case math.Abs(v-1/0.75) > 1e-6:
			t.Fatalf("kept value %v, want 1/(1-p)", v)
		}
	}
	if frac := float64(zeros) / 4000; math.Abs(frac-0.25) > 0.03 {
		t.Fatalf("dropped %v, want 0.25", frac)
	}
	SetTraining(d, false)
	if d.Forward(x) != x {
		t.Fatal("eval dropout must return its input")
	}
	// A TransformerEncoderLayer in training mode drops; in eval it is
	// deterministic.
	enc := NewTransformerEncoderLayer(cpu, 8, 2, TransformerEncoderLayerOpts{DimFeedforward: 16, Dropout: 0.5})
	src := tensor.Randn(cpu, dtype.F32, 3, 2, 8)
	if slices.Equal(enc.Forward(src).Float64s(), enc.Forward(src).Float64s()) {
		t.Error("training-mode dropout gave identical outputs twice")
	}
	SetTraining(enc, false)
	if !slices.Equal(enc.Forward(src).Float64s(), enc.Forward(src).Float64s()) {
		t.Error("eval-mode outputs differ")
	}
}

func TestBatchNormRunningStats(t *testing.T) {
	bn := NewBatchNorm1d(cpu, 2, BatchNormOpts{Momentum: 0.5})
	x := tensor.FromSlice(cpu, []float32{1, 10, 3, 20, 5, 30}, 3, 2)
	bn.Forward(x)
	// Batch means 3 and 20, unbiased variances 4 and 100.
	want := map[string][]float64{"running_mean": {1.5, 10}, "running_var": {2.5, 50.5}, "num_batches_tracked": {1}}
	for _, p := range StateDict(bn) {
		if w, ok := want[p.Name]; ok && !slices.Equal(p.Tensor.Float64s(), w) {
			t.Errorf("%s = %v, want %v", p.Name, p.Tensor.Float64s(), w)
		}
	}
	// One value per channel is an error and leaves the statistics alone.
	err := tensor.Catch(func() { bn.Forward(tensor.Ones(cpu, dtype.F32, 1, 2)) })
	if err == nil {
		t.Fatal("batch of one: no error")
	}
	if bn.NumBatchesTracked.Item() != 1 {
		t.Fatal("a rejected batch moved num_batches_tracked")
	}
	// Eval uses the running statistics.
	SetTraining(bn, false)
	y := bn.Forward(tensor.FromSlice(cpu, []float32{1.5, 10}, 1, 2)).Float64s()
	if math.Abs(y[0]) > 1e-6 || math.Abs(y[1]) > 1e-6 {
		t.Fatalf("eval of the running mean = %v, want 0", y)
	}
}

func TestContainers(t *testing.T) {
	d := NewModuleDict().Set("b", NewLinear(cpu, 1, 1, false)).Set("a", NewLinear(cpu, 1, 2, false))
	d.Set("b", NewLinear(cpu, 1, 3, false))
	if !slices.Equal(d.Keys(), []string{"b", "a"}) || !slices.Equal(keysOf(d), []string{"b.weight:f32[3,1]", "a.weight:f32[2,1]"}) {
		t.Fatalf("module dict %v %v", d.Keys(), keysOf(d))
	}
	if !d.Delete("b") || d.Delete("b") || d.Len() != 1 {
		t.Fatal("delete")
	}
	if _, ok := d.Get("a"); !ok {
		t.Fatal("get")
	}
	l := NewModuleList(NewLinear(cpu, 1, 1, true))
	l.Append(NewLinear(cpu, 1, 2, false))
	outer := &goldenTree{Layers: l, Heads: d}
	outer.RegisterModule("layers", l)
	outer.RegisterModule("heads", d)
	if got := keysOf(outer); !slices.Equal(got, []string{"layers.0.weight:f32[1,1]", "layers.0.bias:f32[1]", "layers.1.weight:f32[2,1]", "heads.a.weight:f32[2,1]"}) {
		t.Fatalf("nested keys %v", got)
	}
	s := NewSequential(NewLinear(cpu, 3, 4, true), LayerFunc(func(x *tensor.Tensor) *tensor.Tensor { return x.MulScalar(2) }), NewLinear(cpu, 4, 2, true))
	if s.Len() != 3 || s.At(-1).(*Linear).OutFeatures != 2 {
		t.Fatal("sequential indexing")
	}
	if got := keysOf(s); !slices.Equal(got, []string{"0.weight:f32[4,3]", "0.bias:f32[4]", "2.weight:f32[2,4]", "2.bias:f32[2]"}) {
		t.Fatalf("sequential with a LayerFunc: %v", got)
	}
	if got := s.Forward(tensor.Ones(cpu, dtype.F32, 5, 3)).Shape(); !slices.Equal(got, []int{5, 2}) {
		t.Fatalf("sequential output %v", got)
	}
}

func TestCausalMatchesExplicitMask(t *testing.T) {
	mha := NewMultiheadAttention(cpu, 8, 2, MultiheadAttentionOpts{BatchFirst: true})
	x := tensor.Randn(cpu, dtype.F32, 2, 5, 8)
	mask := tensor.Ones(cpu, dtype.Bool, 5, 5).Triu(1) // true: may not attend
	a, wa := mha.Attend(x, x, x, AttentionOpts{IsCausal: true, NeedWeights: true})
	b, wb := mha.Attend(x, x, x, AttentionOpts{AttnMask: mask, NeedWeights: true})
	c, _ := mha.Attend(x, x, x, AttentionOpts{IsCausal: true})
	for i, pair := range [][2]*tensor.Tensor{{a, b}, {wa, wb}, {a, c}} {
		g, w := pair[0].Float64s(), pair[1].Float64s()
		for j := range g {
			if math.Abs(g[j]-w[j]) > 1e-5 {
				t.Fatalf("pair %d element %d: %v vs %v", i, j, g[j], w[j])
			}
		}
	}
	// Weights are causal: row i has zeros after i.
	w := wa.Float64s()
	for n := 0; n < 2; n++ {
		for i := 0; i < 5; i++ {
			for j := i + 1; j < 5; j++ {
				if w[n*25+i*5+j] != 0 {
					t.Fatalf("weight [%d,%d,%d] = %v", n, i, j, w[n*25+i*5+j])
				}
			}
		}
	}
}

func TestInvalidArguments(t *testing.T) {
	cases := []struct {
		name string
		f    func()
	}{
		{"conv_groups", func() { NewConv2d(cpu, 3, 4, []int{3}, ConvOpts{Groups: 2}) }},
		{"conv_kernel", func() { NewConv2d(cpu, 3, 4, []int{3, 3, 3}, ConvOpts{}) }},
		{"conv_padding_mode", func() { NewConv2d(cpu, 3, 4, []int{3}, ConvOpts{PaddingMode: "mirror"}) }},
		{"conv_same_strided", func() { NewConv1d(cpu, 3, 4, []int{3}, ConvOpts{PaddingString: "same", Stride: []int{2}}) }},
		{"conv_transpose_reflect", func() { NewConvTranspose2d(cpu, 3, 4, []int{3}, ConvOpts{PaddingMode: "reflect"}) }},
		{"conv_input_channels", func() { NewConv2d(cpu, 3, 4, []int{3}, ConvOpts{}).Forward(tensor.Zeros(cpu, dtype.F32, 1, 2, 5, 5)) }},
		{"linear_input", func() { NewLinear(cpu, 3, 4, true).Forward(tensor.Zeros(cpu, dtype.F32, 2, 5)) }},
		{"mha_heads", func() { NewMultiheadAttention(cpu, 10, 3, MultiheadAttentionOpts{}) }},
		{"mha_mask_shape", func() {
			x := tensor.Zeros(cpu, dtype.F32, 3, 1, 4)
			NewMultiheadAttention(cpu, 4, 2, MultiheadAttentionOpts{}).Attend(x, x, x, AttentionOpts{AttnMask: tensor.Zeros(cpu, dtype.F32, 2, 2)})
		}},
		{"batchnorm_rank", func() { NewBatchNorm2d(cpu, 3, BatchNormOpts{}).Forward(tensor.Zeros(cpu, dtype.F32, 2, 3)) }},
		{"group_norm", func() { NewGroupNorm(cpu, 3, 4, GroupNormOpts{}) }},
		{"dropout_p", func() { NewDropout(1.5) }},
		{"embedding_padding", func() { NewEmbedding(cpu, 3, 2, EmbeddingOpts{PaddingIdx: 3, HasPaddingIdx: true}) }},
		{"embedding_float", func() { NewEmbedding(cpu, 3, 2, EmbeddingOpts{}).Forward(tensor.Zeros(cpu, dtype.F32, 2)) }},
		{"max_pool_padding", func() { NewMaxPool2d([]int{2}, PoolOpts{Padding: []int{2}}) }},
		{"gelu", func() { NewGELU("erf") }},
		{"encoder_activation", func() { NewTransformerEncoderLayer(cpu, 4, 2, TransformerEncoderLayerOpts{Activation: "swish"}) }},
		{"sequential_index", func() { NewSequential().At(0) }},
		{"module_dict_key", func() { NewModuleDict().Set("a.b", NewReLU()) }},
	}
	for _, c := range cases {
		err := tensor.Catch(c.f)
		if !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: got %v, want ErrInvalidArgument", c.name, err)
		}
	}
}
