//go:build pjrt

package pjrt

import (
	"fmt"
	"slices"
)

// BuildOptions are the parts of XLA's ExecutableBuildOptionsProto a
// multi-device compile sets (Client.Compile). The zero value is one
// replica and one partition, the single-device compile the eager backend
// does.
type BuildOptions struct {
	// NumReplicas and NumPartitions are XLA's replica and partition counts
	// (0 means 1). Replicas run the same program on different data and
	// reach each other through collectives whose replica_groups name
	// replica ids; partitions are the pieces of one SPMD program, named by
	// partition ids (collectives with a channel_handle and
	// use_global_device_ids, or the partitioner's own).
	NumReplicas, NumPartitions int
	// DeviceAssignment[r][p] is the global device id that runs replica r,
	// partition p. Nil assigns devices 0, 1, ... to (r, p) in row-major
	// order.
	DeviceAssignment [][]int
	// SPMD runs XLA's SPMD partitioner: the program is written for global
	// shapes with sharding annotations and XLA splits it into
	// NumPartitions pieces (use_spmd_partitioning).
	SPMD bool
	// Shardy selects the Shardy partitioner (use_shardy_partitioner) for
	// programs annotated with sdy attributes; without it GSPMD reads
	// mhlo.sharding attributes.
	Shardy bool
}

func (o BuildOptions) counts() (replicas, partitions int) {
	replicas, partitions = max(o.NumReplicas, 1), max(o.NumPartitions, 1)
	return
}

// assignment returns the device assignment, checked, as [replica][partition].
func (o BuildOptions) assignment() ([][]int, error) {
	nr, np := o.counts()
	if o.DeviceAssignment == nil {
		da := make([][]int, nr)
		for r := range da {
			da[r] = make([]int, np)
			for p := range da[r] {
				da[r][p] = r*np + p
			}
		}
		return da, nil
	}
	if len(o.DeviceAssignment) != nr {
		return nil, fmt.Errorf("pjrt: device assignment has %d replica rows, want %d", len(o.DeviceAssignment), nr)
	}
	seen := map[int]bool{}
	for r, row := range o.DeviceAssignment {
		if len(row) != np {
			return nil, fmt.Errorf("pjrt: device assignment row %d has %d partitions, want %d", r, len(row), np)
		}
		for _, d := range row {
			if d < 0 || seen[d] {
				return nil, fmt.Errorf("pjrt: device assignment %v: device %d is negative or used twice", o.DeviceAssignment, d)
			}
			seen[d] = true
		}
	}
	return slices.Clone(o.DeviceAssignment), nil
}

// proto returns o as a serialized xla.CompileOptionsProto (field numbers
// from XLA's compile_options.proto, xla.proto and xla_data.proto):
//
//	CompileOptionsProto{executable_build_options(3): {
//	    num_replicas(4), num_partitions(5), use_spmd_partitioning(6),
//	    device_assignment(9): DeviceAssignmentProto{replica_count(1),
//	        computation_count(2), computation_devices(3): [{replica_device_ids(1)}]},
//	    use_shardy_partitioner(19)}}
//
// DeviceAssignmentProto is indexed by computation (partition) first, each
// listing its device per replica.
func (o BuildOptions) proto() ([]byte, error) {
	nr, np := o.counts()
	da, err := o.assignment()
	if err != nil {
		return nil, err
	}
	var dap []byte
	dap = pbVarint(dap, 1, uint64(nr))
	dap = pbVarint(dap, 2, uint64(np))
	for p := range np {
		var ids []byte
		for r := range nr {
			ids = pbUvarint(ids, uint64(da[r][p]))
		}
		dap = pbBytes(dap, 3, pbBytes(nil, 1, ids)) // packed replica_device_ids
	}
	var ebo []byte
	ebo = pbVarint(ebo, 4, uint64(nr))
	ebo = pbVarint(ebo, 5, uint64(np))
	if o.SPMD {
		ebo = pbVarint(ebo, 6, 1)
	}
	ebo = pbBytes(ebo, 9, dap)
	if o.Shardy {
		ebo = pbVarint(ebo, 19, 1)
	}
	return appendOptionOverrides(pbBytes(nil, 3, ebo)), nil
}

// pbUvarint appends v as a protobuf base-128 varint.
func pbUvarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// pbVarint appends field f with wire type 0 (varint).
func pbVarint(b []byte, f int, v uint64) []byte {
	return pbUvarint(pbUvarint(b, uint64(f)<<3), v)
}

// pbBytes appends field f with wire type 2 (length-delimited).
func pbBytes(b []byte, f int, v []byte) []byte {
	b = pbUvarint(pbUvarint(b, uint64(f)<<3|2), uint64(len(v)))
	return append(b, v...)
}
