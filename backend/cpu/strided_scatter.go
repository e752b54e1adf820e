package cpu

import (
	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/op"
)

func init() {
	// as_strided_scatter(input, src): a contiguous copy of input with src
	// written through the view (shape, strides, offset) of that copy.
	RegisterKernel(op.AsStridedScatter, Kernel{Run: func(c *Call) error {
		out := c.Out[0]
		castLoop(c.kernels(), c.In[0], c.InB[0], out, c.OutB[0])
		view := device.Operand{Buf: out.Buf, DType: out.DType, Layout: op.Layout{
			Shape:   c.Attrs.Ints("shape"),
			Strides: c.Attrs.Ints("strides"),
			Offset:  out.Offset + c.Attrs.Int("offset"),
		}}
		castLoop(c.kernels(), c.In[1], c.InB[1], view, c.OutB[0])
		return nil
	}})
}
