//go:build !amd64 || purego

package vec

import "github.com/gotpu/gotpu/dtype"

// Without the amd64 assembly every kernel runs its Go loop.

func (k *Kernels) binaryAsm(o op, dst, a, b []float32) int                 { return 0 }
func (k *Kernels) fmaAsm(dst, a, b, c []float32) int                       { return 0 }
func (k *Kernels) scalarAsm(o op, dst, a []float32, s float32) int         { return 0 }
func (k *Kernels) unaryAsm(o op, dst, a []float32) bool                    { return false }
func (k *Kernels) sumLanesAsm(a []float32, acc *[SumLanes]float32) int     { return 0 }
func (k *Kernels) maxAsm(a []float32) (float32, int)                       { return 0, 0 }
func (k *Kernels) expSubSumAsm(x []float32, m float32) (float32, bool)     { return 0, false }
func (k *Kernels) ropeAsm(dst, x, c, s []float32, h int) int               { return 0 }
func (k *Kernels) cmpAsm(c Cmp, d []bool, x, y []float32, scalar bool) int { return 0 }
func (k *Kernels) selectAsm(d []uint32, cond []byte, x, y []uint32, mode int) int {
	return 0
}
func (k *Kernels) whereAsm(d, c, a, b []float32) int                     { return 0 }
func (k *Kernels) widenAsm(dst []float32, src []dtype.BFloat16) int      { return 0 }
func (k *Kernels) narrowAsm(dst []dtype.BFloat16, src []float32) int     { return 0 }
func (k *Kernels) roundAsm(x []float32, lo int) int                      { return 0 }
func (k *Kernels) packAsm(dst []uint16, src []float32) int               { return 0 }
func (k *Kernels) ropeBF16Asm(dst, x, c, s []dtype.BFloat16, h int) bool { return false }
