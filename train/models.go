package train

import (
	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dist"
	"github.com/gotpu/gotpu/nn"
	"github.com/gotpu/gotpu/tensor"
)

// MLP is gotpu's MNIST MLP: 784-512-256-10 with ReLU (state-dict keys
// fc1.*, fc2.*, fc3.*, as tools/golden/train_gen.py's PyTorch model).
type MLP struct {
	nn.Base
	FC1, FC2, FC3 *nn.Linear
}

// NewMLP builds the MLP on dev with PyTorch's default initialisation.
func NewMLP(dev device.Device) *MLP {
	m := &MLP{FC1: nn.NewLinear(dev, 784, 512, true), FC2: nn.NewLinear(dev, 512, 256, true), FC3: nn.NewLinear(dev, 256, 10, true)}
	m.RegisterModule("fc1", m.FC1)
	m.RegisterModule("fc2", m.FC2)
	m.RegisterModule("fc3", m.FC3)
	return m
}

// Forward maps images [B, 1, 28, 28] (or [B, 784]) to logits [B, 10].
func (m *MLP) Forward(x *tensor.Tensor) *tensor.Tensor { return m.forwardLayers(x, direct) }

func (m *MLP) fsdpUnits() []dist.FSDPUnit {
	return []dist.FSDPUnit{dist.ModuleUnit("fc1", m.FC1), dist.ModuleUnit("fc2", m.FC2), dist.ModuleUnit("fc3", m.FC3)}
}

func (m *MLP) forwardLayers(x *tensor.Tensor, run layerRunner) *tensor.Tensor {
	x = x.Flatten(1, -1)
	x = run(0, func() *tensor.Tensor { return m.FC1.Forward(x) }).Relu()
	x = run(1, func() *tensor.Tensor { return m.FC2.Forward(x) }).Relu()
	return run(2, func() *tensor.Tensor { return m.FC3.Forward(x) })
}

// CNN is gotpu's LeNet-5-like MNIST CNN: conv5x5(1->6, pad 2)-ReLU-maxpool2,
// conv5x5(6->16)-ReLU-maxpool2, then fully connected 400-120-84-10 with
// ReLU (state-dict keys conv1.*, conv2.*, fc1.*, fc2.*, fc3.*).
type CNN struct {
	nn.Base
	Conv1, Conv2  *nn.Conv2d
	FC1, FC2, FC3 *nn.Linear
	pool          *nn.MaxPool2d
}

// NewCNN builds the CNN on dev with PyTorch's default initialisation.
func NewCNN(dev device.Device) *CNN {
	m := &CNN{
		Conv1: nn.NewConv2d(dev, 1, 6, []int{5, 5}, nn.ConvOpts{Padding: []int{2, 2}}),
		Conv2: nn.NewConv2d(dev, 6, 16, []int{5, 5}, nn.ConvOpts{}),
		FC1:   nn.NewLinear(dev, 400, 120, true),
		FC2:   nn.NewLinear(dev, 120, 84, true),
		FC3:   nn.NewLinear(dev, 84, 10, true),
		pool:  nn.NewMaxPool2d([]int{2, 2}, nn.PoolOpts{}),
	}
	m.RegisterModule("conv1", m.Conv1)
	m.RegisterModule("conv2", m.Conv2)
	m.RegisterModule("fc1", m.FC1)
	m.RegisterModule("fc2", m.FC2)
	m.RegisterModule("fc3", m.FC3)
	return m
}

// Forward maps images [B, 1, 28, 28] to logits [B, 10].
func (m *CNN) Forward(x *tensor.Tensor) *tensor.Tensor { return m.forwardLayers(x, direct) }

func (m *CNN) fsdpUnits() []dist.FSDPUnit {
	return []dist.FSDPUnit{dist.ModuleUnit("conv1", m.Conv1), dist.ModuleUnit("conv2", m.Conv2),
		dist.ModuleUnit("fc1", m.FC1), dist.ModuleUnit("fc2", m.FC2), dist.ModuleUnit("fc3", m.FC3)}
}

func (m *CNN) forwardLayers(x *tensor.Tensor, run layerRunner) *tensor.Tensor {
	x = m.pool.Forward(run(0, func() *tensor.Tensor { return m.Conv1.Forward(x) }).Relu())
	x = m.pool.Forward(run(1, func() *tensor.Tensor { return m.Conv2.Forward(x) }).Relu())
	x = x.Flatten(1, -1)
	x = run(2, func() *tensor.Tensor { return m.FC1.Forward(x) }).Relu()
	x = run(3, func() *tensor.Tensor { return m.FC2.Forward(x) }).Relu()
	return run(4, func() *tensor.Tensor { return m.FC3.Forward(x) })
}

// layerRunner runs layer i's forward fn; --fsdp's runs each layer as its
// FSDP unit (parameters gathered around it).
type layerRunner func(i int, fn func() *tensor.Tensor) *tensor.Tensor

func direct(_ int, fn func() *tensor.Tensor) *tensor.Tensor { return fn() }

// layered is a model FSDP can shard layer by layer: its layers as units,
// in forward order, and its forward with each layer run by a layerRunner.
type layered interface {
	Model
	fsdpUnits() []dist.FSDPUnit
	forwardLayers(x *tensor.Tensor, run layerRunner) *tensor.Tensor
}
