package train

import (
	"github.com/gotpu/gotpu/device"
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
func (m *MLP) Forward(x *tensor.Tensor) *tensor.Tensor {
	x = x.Flatten(1, -1)
	x = m.FC1.Forward(x).Relu()
	x = m.FC2.Forward(x).Relu()
	return m.FC3.Forward(x)
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
func (m *CNN) Forward(x *tensor.Tensor) *tensor.Tensor {
	x = m.pool.Forward(m.Conv1.Forward(x).Relu())
	x = m.pool.Forward(m.Conv2.Forward(x).Relu())
	x = x.Flatten(1, -1)
	x = m.FC1.Forward(x).Relu()
	x = m.FC2.Forward(x).Relu()
	return m.FC3.Forward(x)
}
