package optim

import (
	"math"

	"github.com/gotpu/gotpu/tensor"
)

// Scheduler sets the learning rate of an optimizer's groups from the number
// of Step calls so far (PyTorch's LRScheduler: construct it, then call Step
// once per epoch or per iteration after the optimizer's step).
type Scheduler interface {
	// Step advances the schedule by one and writes the new rates.
	Step()
	// LastLR returns the rates the last Step set, per group.
	LastLR() []float64
	// Epoch returns how many times Step was called.
	Epoch() int
	// SetEpoch restores the schedule position (for resuming) and writes the rates.
	SetEpoch(n int)
}

// lrFunc computes a group's rate at step n from its base rate.
type lrFunc func(base float64, n int) float64

type funcSched struct {
	opt   Optimizer
	base  []float64
	f     lrFunc
	n     int
	last  []float64
	extra func(n int) // optional per-step hook (momentum cycling)
}

func newFuncSched(opt Optimizer, f lrFunc) *funcSched {
	s := &funcSched{opt: opt, f: f}
	for _, g := range opt.Groups() {
		s.base = append(s.base, g.Options["lr"])
	}
	s.apply()
	return s
}

func (s *funcSched) apply() {
	tensor.NoReplay("a learning-rate scheduler stepped inside the function (step it outside: the optimizer reads the rate at each replay)")
	s.last = s.last[:0]
	for i, g := range s.opt.Groups() {
		lr := s.f(s.base[i], s.n)
		g.Options["lr"] = lr
		s.last = append(s.last, lr)
	}
	if s.extra != nil {
		s.extra(s.n)
	}
}

func (s *funcSched) Step()             { s.n++; s.apply() }
func (s *funcSched) LastLR() []float64 { return append([]float64(nil), s.last...) }
func (s *funcSched) Epoch() int        { return s.n }
func (s *funcSched) SetEpoch(n int)    { s.n = n; s.apply() }

// NewStepLR decays the rate by gamma every stepSize steps (torch StepLR).
func NewStepLR(opt Optimizer, stepSize int, gamma float64) Scheduler {
	return newFuncSched(opt, func(base float64, n int) float64 {
		return base * math.Pow(gamma, float64(n/stepSize))
	})
}

// NewCosineAnnealingLR anneals from the base rate to etaMin over tMax steps
// (the closed form of torch CosineAnnealingLR).
func NewCosineAnnealingLR(opt Optimizer, tMax int, etaMin float64) Scheduler {
	return newFuncSched(opt, func(base float64, n int) float64 {
		return etaMin + (base-etaMin)*(1+math.Cos(math.Pi*float64(n)/float64(tMax)))/2
	})
}

// NewWarmupCosine warms up linearly from 0 over warmup steps, then follows a
// cosine to minLR at total steps (the schedule of most transformer recipes).
func NewWarmupCosine(opt Optimizer, warmup, total int, minLR float64) Scheduler {
	return newFuncSched(opt, func(base float64, n int) float64 {
		if n < warmup {
			return base * float64(n+1) / float64(warmup)
		}
		if n >= total {
			return minLR
		}
		p := float64(n-warmup) / float64(max(1, total-warmup))
		return minLR + (base-minLR)*(1+math.Cos(math.Pi*p))/2
	})
}

// OneCycleOpts are torch OneCycleLR's options; zero values take its defaults.
type OneCycleOpts struct {
	PctStart        float64 // 0.3
	DivFactor       float64 // 25
	FinalDivFactor  float64 // 1e4
	NoCycleMomentum bool    // cycle_momentum=False
	BaseMomentum    float64 // 0.85
	MaxMomentum     float64 // 0.95
}

// NewOneCycleLR is torch OneCycleLR with cosine annealing (two phases):
// the rate goes from maxLR/DivFactor up to maxLR over PctStart of total
// steps, then down to initial/FinalDivFactor; momentum (SGD's momentum or
// Adam's beta1) cycles inversely.
func NewOneCycleLR(opt Optimizer, maxLR float64, total int, o OneCycleOpts) Scheduler {
	if o.PctStart == 0 {
		o.PctStart = 0.3
	}
	if o.DivFactor == 0 {
		o.DivFactor = 25
	}
	if o.FinalDivFactor == 0 {
		o.FinalDivFactor = 1e4
	}
	if o.BaseMomentum == 0 {
		o.BaseMomentum = 0.85
	}
	if o.MaxMomentum == 0 {
		o.MaxMomentum = 0.95
	}
	initial := maxLR / o.DivFactor
	minLR := initial / o.FinalDivFactor
	end1 := o.PctStart*float64(total) - 1
	end2 := float64(total) - 1
	cos := func(start, end, pct float64) float64 { return end + (start-end)/2*(math.Cos(math.Pi*pct)+1) }
	phase := func(n int, a1, a2, a3 float64) float64 {
		x := float64(n)
		if x <= end1 {
			return cos(a1, a2, x/end1)
		}
		return cos(a2, a3, (x-end1)/(end2-end1))
	}
	s := newFuncSched(opt, func(_ float64, n int) float64 { return phase(n, initial, maxLR, minLR) })
	if !o.NoCycleMomentum {
		s.extra = func(n int) {
			m := phase(n, o.MaxMomentum, o.BaseMomentum, o.MaxMomentum)
			for _, g := range opt.Groups() {
				if _, ok := g.Options["betas0"]; ok {
					g.Options["betas0"] = m
				} else if _, ok := g.Options["momentum"]; ok {
					g.Options["momentum"] = m
				}
			}
		}
		s.extra(0)
	}
	return s
}
