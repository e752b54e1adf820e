package cpu

import (
	"slices"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/op"
)

// The direct index_copy kernel: a copy of the input with whole slices of
// source written along dim, row by row, instead of the decomposition's
// element-by-element scatter over an expanded index (the KV cache writes of
// every decoder step). Duplicate indices: the last one wins, as in the
// decomposition.
func init() {
	RegisterKernel(op.IndexCopy, Kernel{Run: bySize(indexCopyKernel[uint8], indexCopyKernel[uint16], indexCopyKernel[uint32], indexCopyKernel[uint64])})
}

func indexCopyKernel[T any](c *Call) error {
	x, idx, s, out := c.In[0], c.In[1], c.In[2], c.Out[0]
	r := len(out.Shape)
	ax := 0
	if r > 0 {
		var err error
		if ax, err = axisOf(c, r); err != nil {
			return err
		}
	}
	n, ost, sst := 1, 0, 0
	var oOuter, oInner, sOuter, sInner op.Layout
	if r > 0 {
		n, ost = out.Shape[ax], out.Strides[ax]
		oOuter = op.Layout{Shape: out.Shape[:ax], Strides: out.Strides[:ax], Offset: out.Offset}
		oInner = op.Layout{Shape: out.Shape[ax+1:], Strides: out.Strides[ax+1:]}
	} else {
		oOuter = op.Layout{Shape: []int{}, Strides: []int{}, Offset: out.Offset}
		oInner = op.Layout{Shape: []int{}, Strides: []int{}}
	}
	if len(s.Shape) > 0 {
		sst = s.Strides[ax]
		sOuter = op.Layout{Shape: s.Shape[:ax], Strides: s.Strides[:ax], Offset: s.Offset}
		sInner = op.Layout{Shape: s.Shape[ax+1:], Strides: s.Strides[ax+1:]}
	} else {
		sOuter = op.Layout{Shape: slices.Clone(oOuter.Shape), Strides: make([]int, len(oOuter.Shape)), Offset: s.Offset}
		sInner = op.Layout{Shape: slices.Clone(oInner.Shape), Strides: make([]int, len(oInner.Shape))}
	}
	ioffs := ixOffsets(idx.Layout)
	rd := ixReader(idx, c.InB[1])
	pos := make([]int, len(ioffs))
	for j, io := range ioffs {
		v := rd(io)
		if v < 0 || v >= int64(n) {
			return outOfBounds(v, ax, n)
		}
		pos[j] = int(v) * ost
	}
	if !sameView(x, c.InB[0], out, c.OutB[0]) {
		castLoop(c.kernels(), x, c.InB[0], out, c.OutB[0])
	}
	oo, so := ixOffsets(oOuter), ixOffsets(sOuter)
	inner := op.Numel(oInner.Shape)
	contig := oInner.IsContiguous() && sInner.IsContiguous()
	var oin, sin []int
	if !contig {
		oin, sin = ixOffsets(oInner), ixOffsets(sInner)
	}
	src, dst := as[T](c.InB[2]), as[T](c.OutB[0])
	// Rows of the same outer position are written in index order (the
	// last duplicate wins), so threads split the outer positions only.
	parallelFor(len(oo), len(oo)*len(pos)*inner, func(lo, hi int) {
		for o := lo; o < hi; o++ {
			for j, p := range pos {
				d, sb := oo[o]+p, so[o]+j*sst
				if contig {
					copy(dst[d:d+inner], src[sb:sb+inner])
					continue
				}
				for e := range oin {
					dst[d+oin[e]] = src[sb+sin[e]]
				}
			}
		}
	})
	return nil
}

// sameView reports whether operand a (bytes ab) and operand b (bytes bb)
// are the same elements of the same memory: an in-place update, where
// copying the input to the output would rewrite every element unchanged.
func sameView(a device.Operand, ab []byte, b device.Operand, bb []byte) bool {
	if len(ab) == 0 || len(bb) == 0 || &ab[0] != &bb[0] || a.DType != b.DType || a.Offset != b.Offset {
		return false
	}
	return slices.Equal(a.Shape, b.Shape) && slices.Equal(a.Strides, b.Strides)
}
