package op

import (
	"fmt"
	"math"
	"slices"

	"github.com/gotpu/gotpu/dtype"
)

// Optimizer steps as single in-place primitives. An optimizer's update is a
// chain of a dozen elementwise ops per parameter; as one kernel it reads and
// writes each element once. They are in-place primitives (Inplace inputs),
// which cannot be composites in this runtime, so they have no decomposition:
// a backend without a kernel reports that through Supports and package optim
// then runs its op-by-op path instead (which is the reference these kernels
// are tested against, with PyTorch 1.13's torch.optim as the golden data).
//
// Arithmetic contract (what a kernel must reproduce): each op of PyTorch
// 1.13's single-tensor (foreach=False) implementation, per element and in
// that order, rounded to the tensor dtype after each op, with the
// hyper-parameters rounded to the tensor dtype where PyTorch converts them.
// See backend/cpu/optim.go for the exact sequence.
func init() {
	Register(&Def{
		Name: "adam_step", Kind: Primitive, Group: "optim",
		Doc: "One Adam/AdamW update of param and its state in place (torch.optim.Adam / AdamW, foreach=False): " +
			"step is the new step count (1 for the first update); decoupled selects AdamW's weight decay; " +
			"amsgrad needs max_exp_avg_sq.",
		Inputs:  []string{"param", "grad", "exp_avg", "exp_avg_sq", "max_exp_avg_sq?"},
		Inplace: []int{0, 2, 3, 4},
		Dynamic: []string{"lr", "step"},
		DTypes:  SetFloats,
		Attrs: []AttrSpec{
			{Name: "lr", Type: AttrFloat},
			{Name: "beta1", Type: AttrFloat, Default: 0.9},
			{Name: "beta2", Type: AttrFloat, Default: 0.999},
			{Name: "eps", Type: AttrFloat, Default: 1e-8},
			{Name: "weight_decay", Type: AttrFloat, Default: 0.0},
			{Name: "step", Type: AttrInt},
			{Name: "decoupled", Type: AttrBool, Default: false},
			{Name: "amsgrad", Type: AttrBool, Default: false},
		},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if a.Int("step") < 1 {
				return nil, fmt.Errorf("adam_step: step must be >= 1, got %d", a.Int("step"))
			}
			if a.Bool("amsgrad") != (in[4].DType != dtype.Invalid) {
				if a.Bool("amsgrad") {
					return nil, fmt.Errorf("adam_step: amsgrad needs max_exp_avg_sq")
				}
				return nil, fmt.Errorf("adam_step: max_exp_avg_sq given without amsgrad")
			}
			return nil, sameTensors("adam_step", []string{"param", "grad", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"}, in)
		},
		StableHLO: inplaceNoHLO("adam_step"),
	})
	Register(&Def{
		Name: "sgd_step", Kind: Primitive, Group: "optim",
		Doc: "One SGD update of param (and its momentum buffer) in place (torch.optim.SGD, foreach=False): " +
			"momentum != 0 needs momentum_buffer; first initialises the buffer from the gradient as PyTorch's first step does.",
		Inputs:  []string{"param", "grad", "momentum_buffer?"},
		Inplace: []int{0, 2},
		Dynamic: []string{"lr"},
		DTypes:  SetFloats,
		Attrs: []AttrSpec{
			{Name: "lr", Type: AttrFloat},
			{Name: "momentum", Type: AttrFloat, Default: 0.0},
			{Name: "dampening", Type: AttrFloat, Default: 0.0},
			{Name: "weight_decay", Type: AttrFloat, Default: 0.0},
			{Name: "nesterov", Type: AttrBool, Default: false},
			{Name: "first", Type: AttrBool, Default: false},
		},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			hasBuf := in[2].DType != dtype.Invalid
			if a.Float("momentum") != 0 && !hasBuf {
				return nil, fmt.Errorf("sgd_step: momentum %v needs momentum_buffer", a.Float("momentum"))
			}
			if a.Float("momentum") == 0 && hasBuf {
				return nil, fmt.Errorf("sgd_step: momentum_buffer given with momentum 0")
			}
			if a.Bool("nesterov") && (a.Float("momentum") <= 0 || a.Float("dampening") != 0) {
				return nil, fmt.Errorf("sgd_step: nesterov momentum requires a momentum and zero dampening")
			}
			return nil, sameTensors("sgd_step", []string{"param", "grad", "momentum_buffer"}, in)
		},
		StableHLO: inplaceNoHLO("sgd_step"),
	})
}

// sameTensors checks that every present input has the shape and floating
// dtype of input 0 (an absent optional input has a zero Meta).
func sameTensors(op string, names []string, in []Meta) error {
	p := in[0]
	if !p.DType.IsFloat() {
		return fmt.Errorf("%s: %s must be floating point, got %s", op, names[0], p.DType)
	}
	for i := 1; i < len(in); i++ {
		m := in[i]
		if m.DType == dtype.Invalid {
			continue
		}
		if m.DType != p.DType || !slices.Equal(m.Shape, p.Shape) {
			return fmt.Errorf("%s: %s is %v, %s is %v (they must match)", op, names[i], m, names[0], p)
		}
	}
	return nil
}

func inplaceNoHLO(name string) StableHLOFunc {
	return func(e HLOEmitter, in []HLOValue, out []Meta, a Attrs) ([]HLOValue, error) {
		return nil, unsupported(name, "in-place writes have no functional form (trace the op-by-op update)")
	}
}

// AdamBiasCorrections returns Adam's bias corrections 1 - beta1^step and
// 1 - beta2^step as PyTorch computes them in Python floats, whose power is
// C's pow: correctly rounded (math.Pow is not: 0.999^1000 is off by 322
// ulps), which the kernels and package optim share.
func AdamBiasCorrections(beta1, beta2 float64, step int) (bc1, bc2 float64) {
	return 1 - PowInt(beta1, step), 1 - PowInt(beta2, step)
}

// PowInt returns x^n for n >= 0, correctly rounded in all but vanishingly
// rare cases: exponentiation by squaring in double-double arithmetic (about
// 100 bits, so 64 squarings lose far less than half an ulp). Results that
// underflow lose their low part gracefully, as pow does.
func PowInt(x float64, n int) float64 {
	if n < 0 {
		return 1 / PowInt(x, -n)
	}
	rh, rl := 1.0, 0.0
	xh, xl := x, 0.0
	for n > 0 {
		if n&1 == 1 {
			rh, rl = ddMul(rh, rl, xh, xl)
		}
		n >>= 1
		if n > 0 {
			xh, xl = ddMul(xh, xl, xh, xl)
		}
	}
	return rh + rl
}

// ddMul multiplies double-double numbers (ah + al) * (bh + bl).
func ddMul(ah, al, bh, bl float64) (float64, float64) {
	p := ah * bh
	e := math.FMA(ah, bh, -p)
	e += ah*bl + al*bh
	h := p + e
	return h, e - (h - p)
}
