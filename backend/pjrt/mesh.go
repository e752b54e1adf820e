//go:build pjrt

package pjrt

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gotpu/gotpu/op"
)

// Mesh is a named grid of devices for SPMD programs (JAX's Mesh): axis
// i has Shape[i] devices. Partition k of a program compiled over the mesh
// is the mesh position with row-major index k and runs on Devices[k].
type Mesh struct {
	Axes  []string // axis names, unique ("data", "model")
	Shape []int    // devices along each axis
	// Devices are the global device ids in row-major mesh order; nil
	// means 0, 1, ..., Size()-1.
	Devices []int
}

// Size returns the number of devices of the mesh.
func (m Mesh) Size() int {
	n := 1
	for _, s := range m.Shape {
		n *= s
	}
	return n
}

func (m Mesh) check() error {
	if len(m.Axes) != len(m.Shape) || len(m.Axes) == 0 {
		return fmt.Errorf("pjrt: mesh %v%v: one size per axis name needed", m.Axes, m.Shape)
	}
	for i, a := range m.Axes {
		if a == "" || strings.ContainsAny(a, "\"{}[], =") || slices.Index(m.Axes, a) != i || m.Shape[i] < 1 {
			return fmt.Errorf("pjrt: mesh %v%v: axis %q is empty, repeated, has a size below 1 or holds a reserved character", m.Axes, m.Shape, a)
		}
	}
	if m.Devices != nil && len(m.Devices) != m.Size() {
		return fmt.Errorf("pjrt: mesh %v%v has %d devices, want %d", m.Axes, m.Shape, len(m.Devices), m.Size())
	}
	return nil
}

// device returns the global device id of partition k.
func (m Mesh) device(k int) int {
	if m.Devices == nil {
		return k
	}
	return m.Devices[k]
}

// coords returns the mesh coordinates of partition k.
func (m Mesh) coords(k int) []int {
	c := make([]int, len(m.Shape))
	for i := len(m.Shape) - 1; i >= 0; i-- {
		c[i] = k % m.Shape[i]
		k /= m.Shape[i]
	}
	return c
}

// index is coords' inverse.
func (m Mesh) index(c []int) int {
	k := 0
	for i, s := range m.Shape {
		k = k*s + c[i]
	}
	return k
}

// Sharding says how an array is laid out over a mesh (JAX's
// PartitionSpec): element i names the mesh axis dimension i is split
// along, or is "" when every device holds the whole dimension. Mesh axes
// no dimension names replicate the array. A nil Sharding replicates it
// fully; a shorter one leaves the trailing dimensions whole.
type Sharding []string

func (s Sharding) check(m Mesh, shape []int) error {
	if len(s) > len(shape) {
		return fmt.Errorf("pjrt: sharding %q has more entries than the array %v has dimensions", []string(s), shape)
	}
	for i, a := range s {
		if a == "" {
			continue
		}
		ax := slices.Index(m.Axes, a)
		if ax < 0 {
			return fmt.Errorf("pjrt: sharding %q names axis %q, not one of the mesh's %v", []string(s), a, m.Axes)
		}
		if slices.Index(s, a) != i {
			return fmt.Errorf("pjrt: sharding %q names axis %q twice", []string(s), a)
		}
		if shape[i]%m.Shape[ax] != 0 {
			return fmt.Errorf("pjrt: sharding %q: dimension %d of %v does not divide over the %d devices of axis %q", []string(s), i, shape, m.Shape[ax], a)
		}
	}
	return nil
}

// axisOf returns the mesh axis dimension d of s is split along, or -1.
func (s Sharding) axisOf(m Mesh, d int) int {
	if d >= len(s) || s[d] == "" {
		return -1
	}
	return slices.Index(m.Axes, s[d])
}

// GSPMD returns the sharding of an array of rank dimensions over m as
// XLA's HLO sharding text, the value of an mhlo.sharding attribute:
// "{replicated}", "{devices=[4,1]<ids>}", or with mesh axes the array is
// not split along, "{devices=[2,1,2]<ids> last_tile_dim_replicate}". The
// ids are partition numbers (mesh positions), which the device assignment
// maps to devices.
func (s Sharding) GSPMD(m Mesh, rank int) (string, error) {
	if err := m.check(); err != nil {
		return "", err
	}
	used := make([]bool, len(m.Shape))
	tiles := make([]int, rank)
	split := false
	for d := range rank {
		tiles[d] = 1
		if ax := s.axisOf(m, d); ax >= 0 {
			tiles[d], used[ax], split = m.Shape[ax], true, true
		}
	}
	if !split {
		return "{replicated}", nil
	}
	var rest []int // mesh axes the array is replicated along
	repl := 1
	for ax, u := range used {
		if !u {
			rest = append(rest, ax)
			repl *= m.Shape[ax]
		}
	}
	dims := slices.Clone(tiles)
	if repl > 1 {
		dims = append(dims, repl)
	}
	// The tile assignment in row-major order of dims: tile (t_0..t_r-1)
	// and replica r is the mesh position whose split axes have the tile's
	// coordinates and whose other axes enumerate r row-major.
	var ids []string
	n := 1
	for _, x := range dims {
		n *= x
	}
	idx := make([]int, len(dims))
	for range n {
		c := make([]int, len(m.Shape))
		for d := range rank {
			if ax := s.axisOf(m, d); ax >= 0 {
				c[ax] = idx[d]
			}
		}
		if repl > 1 {
			r := idx[len(dims)-1]
			for k := len(rest) - 1; k >= 0; k-- {
				c[rest[k]] = r % m.Shape[rest[k]]
				r /= m.Shape[rest[k]]
			}
		}
		ids = append(ids, strconv.Itoa(m.index(c)))
		for k := len(idx) - 1; k >= 0; k-- {
			idx[k]++
			if idx[k] < dims[k] {
				break
			}
			idx[k] = 0
		}
	}
	ds := make([]string, len(dims))
	for i, x := range dims {
		ds[i] = strconv.Itoa(x)
	}
	out := "{devices=[" + strings.Join(ds, ",") + "]" + strings.Join(ids, ",")
	if repl > 1 {
		out += " last_tile_dim_replicate"
	}
	return out + "}", nil
}

// Shardy returns the sharding of an array of rank dimensions as a Shardy
// attribute over the mesh symbol @mesh: #sdy.sharding<@mesh, [{"data"}, {}]>.
func (s Sharding) Shardy(m Mesh, rank int) (string, error) {
	if err := m.check(); err != nil {
		return "", err
	}
	dims := make([]string, rank)
	for d := range rank {
		dims[d] = "{}"
		if ax := s.axisOf(m, d); ax >= 0 {
			dims[d] = "{" + strconv.Quote(m.Axes[ax]) + "}"
		}
	}
	return "#sdy.sharding<@mesh, [" + strings.Join(dims, ", ") + "]>", nil
}

// shardyMesh returns the module-level mesh declaration for Shardy.
func (m Mesh) shardyMesh() string {
	axes := make([]string, len(m.Axes))
	for i, a := range m.Axes {
		axes[i] = strconv.Quote(a) + "=" + strconv.Itoa(m.Shape[i])
	}
	return "sdy.mesh @mesh = <[" + strings.Join(axes, ", ") + "]>"
}

// ShardShape returns the shape of one shard of an array of shape under s.
func (s Sharding) ShardShape(m Mesh, shape []int) ([]int, error) {
	if err := s.check(m, shape); err != nil {
		return nil, err
	}
	out := slices.Clone(shape)
	for d := range out {
		if ax := s.axisOf(m, d); ax >= 0 {
			out[d] /= m.Shape[ax]
		}
	}
	return out, nil
}

// Split returns the shards of a under s, one per partition of m (in
// row-major mesh order).
func (s Sharding) Split(m Mesh, a Array) ([]Array, error) {
	if err := m.check(); err != nil {
		return nil, err
	}
	if err := a.check(); err != nil {
		return nil, err
	}
	ss, err := s.ShardShape(m, a.Shape)
	if err != nil {
		return nil, err
	}
	out := make([]Array, m.Size())
	for k := range out {
		out[k] = Array{DType: a.DType, Shape: slices.Clone(ss), Data: make([]byte, op.Numel(ss)*a.DType.Size())}
		s.copyShard(m, k, a.Shape, a.DType.Size(), func(shardOff, globalOff, n int) {
			copy(out[k].Data[shardOff:shardOff+n], a.Data[globalOff:globalOff+n])
		})
	}
	return out, nil
}

// Join is Split's inverse: it assembles the global array of shape from
// one shard per partition. Shards of a replicated array must agree; Join
// takes the first holder's.
func (s Sharding) Join(m Mesh, shape []int, shards []Array) (Array, error) {
	if err := m.check(); err != nil {
		return Array{}, err
	}
	if len(shards) != m.Size() {
		return Array{}, fmt.Errorf("pjrt: join: %d shards for a mesh of %d", len(shards), m.Size())
	}
	ss, err := s.ShardShape(m, shape)
	if err != nil {
		return Array{}, err
	}
	dt := shards[0].DType
	out := Array{DType: dt, Shape: slices.Clone(shape), Data: make([]byte, op.Numel(shape)*dt.Size())}
	for k, sh := range shards {
		if sh.DType != dt || !slices.Equal(sh.Shape, ss) || sh.check() != nil {
			return Array{}, fmt.Errorf("pjrt: join: shard %d is %s%v, want %s%v", k, sh.DType, sh.Shape, dt, ss)
		}
		s.copyShard(m, k, shape, dt.Size(), func(shardOff, globalOff, n int) {
			copy(out.Data[globalOff:globalOff+n], sh.Data[shardOff:shardOff+n])
		})
	}
	return out, nil
}

// copyShard calls f for each innermost row of partition k's shard of an
// array of shape (byte offsets in the shard and in the global array, and
// the row's byte length).
func (s Sharding) copyShard(m Mesh, k int, shape []int, es int, f func(shardOff, globalOff, n int)) {
	c := m.coords(k)
	r := len(shape)
	if r == 0 {
		f(0, 0, es)
		return
	}
	local := slices.Clone(shape)
	start := make([]int, r)
	for d := range r {
		if ax := s.axisOf(m, d); ax >= 0 {
			local[d] = shape[d] / m.Shape[ax]
			start[d] = c[ax] * local[d]
		}
	}
	if op.Numel(local) == 0 {
		return
	}
	gstride := make([]int, r)
	g := 1
	for d := r - 1; d >= 0; d-- {
		gstride[d] = g
		g *= shape[d]
	}
	row := local[r-1] * es
	idx := make([]int, r) // over local[:r-1]
	for so := 0; ; so += row {
		goff := 0
		for d := range r {
			goff += (start[d] + idx[d]) * gstride[d]
		}
		f(so, goff*es, row)
		d := r - 2
		for ; d >= 0; d-- {
			idx[d]++
			if idx[d] < local[d] {
				break
			}
			idx[d] = 0
		}
		if d < 0 {
			return
		}
	}
}
