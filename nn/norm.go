package nn

import (
	"slices"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
	"github.com/gotpu/gotpu/tensor"
)

// LayerNormOpts are torch.nn.LayerNorm's optional arguments; the zero value
// is torch's default (eps 1e-5, affine with bias).
type LayerNormOpts struct {
	Eps float64 // 0 means 1e-5
	// NoElementwiseAffine drops weight and bias (elementwise_affine=False).
	NoElementwiseAffine bool
	// NoBias drops the bias only (bias=False, torch >= 2.1).
	NoBias bool
}

// LayerNorm normalises over the trailing NormalizedShape dims, then scales
// by Weight (ones) and shifts by Bias (zeros) (torch.nn.LayerNorm).
type LayerNorm struct {
	Base
	NormalizedShape []int
	Eps             float64
	Weight, Bias    *tensor.Tensor
}

// NewLayerNorm returns a LayerNorm over the trailing dims normalizedShape.
func NewLayerNorm(dev device.Device, normalizedShape []int, lo LayerNormOpts, opts ...Option) *LayerNorm {
	nonNegative("LayerNorm", "normalized_shape", normalizedShape...)
	o := makeOptions(opts)
	m := &LayerNorm{NormalizedShape: slices.Clone(normalizedShape), Eps: lo.Eps}
	if m.Eps == 0 {
		m.Eps = 1e-5
	}
	if lo.NoElementwiseAffine {
		m.RegisterParameter("weight", nil)
		m.RegisterParameter("bias", nil)
		return m
	}
	m.Weight = m.RegisterParameter("weight", tensor.Ones(dev, o.dt, normalizedShape...))
	if lo.NoBias {
		m.RegisterParameter("bias", nil)
	} else {
		m.Bias = m.RegisterParameter("bias", tensor.Zeros(dev, o.dt, normalizedShape...))
	}
	return m
}

// Forward normalises x [..., *NormalizedShape].
func (m *LayerNorm) Forward(x *tensor.Tensor) *tensor.Tensor {
	return tensor.LayerNorm(x, m.NormalizedShape, m.Weight, m.Bias, m.Eps)
}

// RMSNormOpts are torch.nn.RMSNorm's optional arguments.
type RMSNormOpts struct {
	// Eps 0 means torch's eps=None: the machine epsilon of the input's
	// dtype (torch.finfo(x.dtype).eps).
	Eps                 float64
	NoElementwiseAffine bool
}

// RMSNorm scales x by 1/√(mean(x²) + eps) over the trailing NormalizedShape
// dims, then by Weight (ones) (torch.nn.RMSNorm, torch >= 2.4).
type RMSNorm struct {
	Base
	NormalizedShape []int
	Eps             float64 // 0: the input dtype's machine epsilon
	Weight          *tensor.Tensor
}

// NewRMSNorm returns an RMSNorm over the trailing dims normalizedShape.
func NewRMSNorm(dev device.Device, normalizedShape []int, ro RMSNormOpts, opts ...Option) *RMSNorm {
	nonNegative("RMSNorm", "normalized_shape", normalizedShape...)
	if ro.Eps < 0 {
		fail("RMSNorm", nil, "eps must be non-negative, got %v", ro.Eps)
	}
	o := makeOptions(opts)
	m := &RMSNorm{NormalizedShape: slices.Clone(normalizedShape), Eps: ro.Eps}
	if ro.NoElementwiseAffine {
		m.RegisterParameter("weight", nil)
	} else {
		m.Weight = m.RegisterParameter("weight", tensor.Ones(dev, o.dt, normalizedShape...))
	}
	return m
}

// Forward normalises x [..., *NormalizedShape].
func (m *RMSNorm) Forward(x *tensor.Tensor) *tensor.Tensor {
	return tensor.RMSNorm(x, m.NormalizedShape, m.Weight, m.Eps)
}

// GroupNormOpts are torch.nn.GroupNorm's optional arguments.
type GroupNormOpts struct {
	Eps      float64 // 0 means 1e-5
	NoAffine bool    // affine=False
}

// GroupNorm normalises NumChannels channels in NumGroups groups, then
// applies per-channel Weight (ones) and Bias (zeros) (torch.nn.GroupNorm).
type GroupNorm struct {
	Base
	NumGroups, NumChannels int
	Eps                    float64
	Weight, Bias           *tensor.Tensor
}

// NewGroupNorm returns a GroupNorm; numChannels must be divisible by
// numGroups.
func NewGroupNorm(dev device.Device, numGroups, numChannels int, gno GroupNormOpts, opts ...Option) *GroupNorm {
	positive("GroupNorm", "num_groups", numGroups)
	nonNegative("GroupNorm", "num_channels", numChannels)
	if numChannels%numGroups != 0 {
		fail("GroupNorm", nil, "num_channels %d must be divisible by num_groups %d", numChannels, numGroups)
	}
	o := makeOptions(opts)
	m := &GroupNorm{NumGroups: numGroups, NumChannels: numChannels, Eps: gno.Eps}
	if m.Eps == 0 {
		m.Eps = 1e-5
	}
	if gno.NoAffine {
		m.RegisterParameter("weight", nil)
		m.RegisterParameter("bias", nil)
		return m
	}
	m.Weight = m.RegisterParameter("weight", tensor.Ones(dev, o.dt, numChannels))
	m.Bias = m.RegisterParameter("bias", tensor.Zeros(dev, o.dt, numChannels))
	return m
}

// Forward normalises x [N, C, *].
func (m *GroupNorm) Forward(x *tensor.Tensor) *tensor.Tensor {
	if x.Dim() < 2 || x.Size(1) != m.NumChannels {
		fail("GroupNorm", []*tensor.Tensor{x}, "expected input [N, %d, *]", m.NumChannels)
	}
	return tensor.GroupNorm(x, m.NumGroups, m.Weight, m.Bias, m.Eps)
}

// BatchNormOpts are the optional arguments of torch.nn.BatchNorm1d/2d; the
// zero value is torch's default (eps 1e-5, momentum 0.1, affine, tracking
// running statistics).
type BatchNormOpts struct {
	Eps float64 // 0 means 1e-5
	// Momentum is the weight of the batch statistics in the running
	// averages; 0 means 0.1 unless ZeroMomentum is set.
	Momentum float64
	// ZeroMomentum makes a momentum of 0 literal (running stats never move).
	ZeroMomentum bool
	// CumulativeAverage is momentum=None: the running statistics are the
	// plain average over all batches seen (factor 1/num_batches_tracked).
	CumulativeAverage bool
	// NoAffine drops weight and bias (affine=False).
	NoAffine bool
	// NoTrackRunningStats keeps no running statistics
	// (track_running_stats=False): batch statistics are used in training and
	// evaluation alike.
	NoTrackRunningStats bool
}

// BatchNorm normalises each channel of an [N, C, *] input by its batch
// statistics in training, updating RunningMean and RunningVar (with the
// unbiased batch variance) and NumBatchesTracked exactly as PyTorch; in
// evaluation it uses the running statistics (torch.nn.BatchNorm1d/2d).
type BatchNorm struct {
	Base
	NumFeatures int
	Eps         float64
	// Momentum is the running-average factor; CumulativeAverage replaces it
	// with 1/NumBatchesTracked (momentum=None).
	Momentum          float64
	CumulativeAverage bool
	Weight, Bias      *tensor.Tensor
	// RunningMean and RunningVar ([C], f32 or WithDType) and
	// NumBatchesTracked (0-d i64) are nil without track_running_stats.
	RunningMean, RunningVar, NumBatchesTracked *tensor.Tensor
	name                                       string
	ranks                                      []int
}

// BatchNorm1d is BatchNorm over [N, C] or [N, C, L] inputs.
type BatchNorm1d = BatchNorm

// BatchNorm2d is BatchNorm over [N, C, H, W] inputs.
type BatchNorm2d = BatchNorm

// NewBatchNorm1d returns a BatchNorm over [N, C] or [N, C, L] inputs
// (torch.nn.BatchNorm1d).
func NewBatchNorm1d(dev device.Device, numFeatures int, bo BatchNormOpts, opts ...Option) *BatchNorm1d {
	return newBatchNorm("BatchNorm1d", []int{2, 3}, dev, numFeatures, bo, opts)
}

// NewBatchNorm2d returns a BatchNorm over [N, C, H, W] inputs
// (torch.nn.BatchNorm2d).
func NewBatchNorm2d(dev device.Device, numFeatures int, bo BatchNormOpts, opts ...Option) *BatchNorm2d {
	return newBatchNorm("BatchNorm2d", []int{4}, dev, numFeatures, bo, opts)
}

func newBatchNorm(name string, ranks []int, dev device.Device, c int, bo BatchNormOpts, opts []Option) *BatchNorm {
	nonNegative(name, "num_features", c)
	o := makeOptions(opts)
	m := &BatchNorm{NumFeatures: c, Eps: bo.Eps, Momentum: bo.Momentum, CumulativeAverage: bo.CumulativeAverage, name: name, ranks: ranks}
	if m.Eps == 0 {
		m.Eps = 1e-5
	}
	if m.Momentum == 0 && !bo.ZeroMomentum {
		m.Momentum = 0.1
	}
	if bo.NoAffine {
		m.RegisterParameter("weight", nil)
		m.RegisterParameter("bias", nil)
	} else {
		m.Weight = m.RegisterParameter("weight", tensor.Ones(dev, o.dt, c))
		m.Bias = m.RegisterParameter("bias", tensor.Zeros(dev, o.dt, c))
	}
	if bo.NoTrackRunningStats {
		m.RegisterBuffer("running_mean", nil, true)
		m.RegisterBuffer("running_var", nil, true)
		m.RegisterBuffer("num_batches_tracked", nil, true)
		return m
	}
	m.RunningMean = m.RegisterBuffer("running_mean", tensor.Zeros(dev, o.dt, c), true)
	m.RunningVar = m.RegisterBuffer("running_var", tensor.Ones(dev, o.dt, c), true)
	m.NumBatchesTracked = m.RegisterBuffer("num_batches_tracked", tensor.Zeros(dev, dtype.I64), true)
	return m
}

// Forward normalises x. In training mode with running statistics it first
// increments NumBatchesTracked, then updates the running averages from x's
// batch mean and unbiased variance (computed in float64).
func (m *BatchNorm) Forward(x *tensor.Tensor) *tensor.Tensor {
	if !slices.Contains(m.ranks, x.Dim()) {
		want := "4D"
		if m.ranks[0] == 2 {
			want = "2D or 3D"
		}
		fail(m.name, []*tensor.Tensor{x}, "expected %s input (got %dD input)", want, x.Dim())
	}
	if x.Size(1) != m.NumFeatures {
		fail(m.name, []*tensor.Tensor{x}, "expected %d channels in dim 1, got %d", m.NumFeatures, x.Size(1))
	}
	training := m.Training()
	bo := tensor.BatchNormOpts{Weight: m.Weight, Bias: m.Bias, Eps: m.Eps, Momentum: 1}
	if !training && m.RunningMean != nil {
		bo.RunningMean, bo.RunningVar = m.RunningMean, m.RunningVar
		return tensor.BatchNorm(x, bo)
	}
	bo.Training = true
	// Normalise first: it rejects a batch with one value per channel
	// before any running statistic moves.
	y := tensor.BatchNorm(x, bo)
	if training && m.RunningMean != nil {
		m.updateRunningStats(x)
	}
	return y
}

func (m *BatchNorm) updateRunningStats(x *tensor.Tensor) {
	tensor.NoGrad(func() {
		m.NumBatchesTracked.AddInPlace(tensor.Scalar(int64(1)))
		factor := m.Momentum
		if m.CumulativeAverage {
			factor = 1 / m.NumBatchesTracked.Item()
		}
		dims := []int{0}
		for i := 2; i < x.Dim(); i++ {
			dims = append(dims, i)
		}
		xf := tensor.Apply1("convert", []*tensor.Tensor{x.Detach()}, op.Attrs{"dtype": dtype.F64})
		uvar, mean := xf.VarMean(dims, 1, false)
		upd := func(run, batch *tensor.Tensor) {
			r := tensor.Apply1("convert", []*tensor.Tensor{run}, op.Attrs{"dtype": dtype.F64})
			nv := batch.MulScalar(factor).Add(r.MulScalar(1 - factor))
			tensor.Apply("copy_", []*tensor.Tensor{run, nv}, nil)
		}
		upd(m.RunningMean, mean)
		upd(m.RunningVar, uvar)
	})
}
