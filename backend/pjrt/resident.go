//go:build pjrt

package pjrt

/*
#include "capi_spmd.h"
*/
import "C"

import (
	"fmt"
	"slices"

	"github.com/gotpu/gotpu/dtype"
)

// Resident is a global array kept on the devices as its shards between
// runs of a ShardedExecutable — a training step's weights and optimizer
// state stay where they are split, and only the batch crosses from the
// host. It belongs to one client; Free releases it.
type Resident struct {
	c        *Client
	mesh     Mesh
	sharding Sharding
	dt       dtype.DType
	shape    []int
	bufs     []*C.PJRT_Buffer // per partition (row-major mesh position)
}

// Shape returns the global shape.
func (r *Resident) Shape() []int { return slices.Clone(r.shape) }

// DType returns the element type.
func (r *Resident) DType() dtype.DType { return r.dt }

// Free releases the device buffers; the array is unusable afterwards.
func (r *Resident) Free() {
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	if !r.c.closed {
		r.c.destroy(r.bufs)
	}
	r.bufs = nil
}

// Fetch copies the shards to the host and joins them into the global array.
func (r *Resident) Fetch() (Array, error) {
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	if r.bufs == nil || r.c.closed {
		return Array{}, fmt.Errorf("pjrt: fetch: %w", ErrClosed)
	}
	shards := make([]Array, len(r.bufs))
	for k, b := range r.bufs {
		a, err := r.c.download(b)
		if err != nil {
			return Array{}, fmt.Errorf("pjrt: fetch: shard %d: %w", k, err)
		}
		shards[k] = a
	}
	return r.sharding.Join(r.mesh, r.shape, shards)
}

// sameLayout reports whether r is laid out as argument i of s expects.
func (s *ShardedExecutable) sameLayout(r *Resident, i int) error {
	if r.c != s.x.c {
		return fmt.Errorf("it belongs to another client")
	}
	if !slices.Equal(r.shape, s.inShapes[i]) {
		return fmt.Errorf("shape %v, the program takes %v", r.shape, s.inShapes[i])
	}
	if !slices.Equal(r.mesh.Axes, s.mesh.Axes) || !slices.Equal(r.mesh.Shape, s.mesh.Shape) {
		return fmt.Errorf("mesh %v%v, the program's is %v%v", r.mesh.Axes, r.mesh.Shape, s.mesh.Axes, s.mesh.Shape)
	}
	for k := range s.mesh.Size() {
		if r.mesh.device(k) != s.mesh.device(k) {
			return fmt.Errorf("partition %d is on device %d, the program runs it on %d", k, r.mesh.device(k), s.mesh.device(k))
		}
	}
	a, _ := r.sharding.GSPMD(r.mesh, len(r.shape))
	b, _ := s.in[i].GSPMD(s.mesh, len(r.shape))
	if a != b {
		return fmt.Errorf("sharding %q, the program takes %q", []string(r.sharding), []string(s.in[i]))
	}
	return nil
}

// Put uploads the global array a as argument i of the program expects it:
// split after that argument's sharding, each shard on its device.
func (s *ShardedExecutable) Put(i int, a Array) (*Resident, error) {
	if i < 0 || i >= len(s.inShapes) {
		return nil, fmt.Errorf("pjrt: put: argument %d of %d", i, len(s.inShapes))
	}
	if !slices.Equal(a.Shape, s.inShapes[i]) {
		return nil, fmt.Errorf("pjrt: put: argument %d has shape %v, the program takes %v", i, a.Shape, s.inShapes[i])
	}
	shards, err := s.in[i].Split(s.mesh, a)
	if err != nil {
		return nil, fmt.Errorf("pjrt: put: argument %d: %w", i, err)
	}
	c := s.x.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, fmt.Errorf("pjrt: put: %w", ErrClosed)
	}
	r := &Resident{c: c, mesh: s.mesh, sharding: s.in[i], dt: a.DType, shape: slices.Clone(a.Shape), bufs: make([]*C.PJRT_Buffer, len(shards))}
	for k, sh := range shards {
		dev, ok := c.byID[s.mesh.device(k)]
		if !ok {
			c.destroy(r.bufs)
			return nil, fmt.Errorf("pjrt: put: the client has no device %d", s.mesh.device(k))
		}
		b, err := c.upload(dev, sh)
		if err != nil {
			c.destroy(r.bufs)
			return nil, fmt.Errorf("pjrt: put: argument %d, shard %d: %w", i, k, err)
		}
		r.bufs[k] = b
	}
	return r, nil
}

// RunResident runs the program on arrays already on the devices (Put, or
// the results of an earlier run) and returns its results left there, each
// laid out after its result sharding. The arguments stay valid: feeding a
// step's updated weights back in is one call per step.
func (s *ShardedExecutable) RunResident(args ...*Resident) ([]*Resident, error) {
	if len(args) != len(s.inShapes) {
		return nil, fmt.Errorf("pjrt: run resident: %d arguments, the program takes %d", len(args), len(s.inShapes))
	}
	for i, r := range args {
		if err := s.sameLayout(r, i); err != nil {
			return nil, fmt.Errorf("pjrt: run resident: argument %d: %w", i, err)
		}
	}
	c := s.x.c
	c.mu.Lock()
	defer c.mu.Unlock()
	per := make([][]*C.PJRT_Buffer, len(s.part))
	for d, k := range s.part {
		for i, r := range args {
			if r.bufs == nil {
				return nil, fmt.Errorf("pjrt: run resident: argument %d was freed", i)
			}
			per[d] = append(per[d], r.bufs[k])
		}
	}
	outs, err := s.x.launch(per)
	if err != nil {
		return nil, err
	}
	res := make([]*Resident, len(s.outShapes))
	for j, shape := range s.outShapes {
		r := &Resident{c: c, mesh: s.mesh, sharding: s.out[j], shape: slices.Clone(shape), bufs: make([]*C.PJRT_Buffer, s.mesh.Size())}
		for d, k := range s.part {
			r.bufs[k] = outs[d][j]
			outs[d][j] = nil
		}
		var ty C.int
		var dims *C.int64_t
		var nd C.size_t
		if err := perr(c.p.api, "buffer shape", C.gp_buffer_shape(c.p.api, r.bufs[0], &ty, &dims, &nd)); err != nil {
			for _, rr := range res[:j] {
				c.destroy(rr.bufs)
			}
			c.destroy(r.bufs)
			for _, l := range outs {
				c.destroy(l)
			}
			return nil, err
		}
		r.dt, _ = dtypeOfPJ(ty)
		res[j] = r
	}
	return res, nil
}
