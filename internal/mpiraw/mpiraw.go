//go:build gotpu_mpi

// Package mpiraw calls Open MPI's blocking collectives on MPI_COMM_WORLD
// directly, with no timeout, descriptor check or watchdog: the reference
// that `gotpu bench allreduce --engine mpi` times in the same ranks as the
// dist package's mpi engine, interleaved with it, so that both sides see
// the same machine (a separate mpi4py job can land in a quieter or busier
// minute). MPI must already be initialized (dist.Init with the mpi engine
// does it), and no other goroutine may call MPI meanwhile: the process
// runs MPI_THREAD_SERIALIZED.
package mpiraw

/*
#cgo pkg-config: ompi-c
#include <mpi.h>

static int raw_allreduce_f32(void *buf, int n) {
	return MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}
static int raw_barrier(void) { return MPI_Barrier(MPI_COMM_WORLD); }
*/
import "C"

import (
	"fmt"
	"math"
	"unsafe"
)

// Built reports whether this build has the package's functions (build tag
// gotpu_mpi).
const Built = true

// AllReduceSumF32 sums buf (float32 values) over every rank in place with
// MPI_Allreduce.
func AllReduceSumF32(buf []float32) error {
	if len(buf) == 0 {
		return nil
	}
	if len(buf) > math.MaxInt32 {
		return fmt.Errorf("mpiraw: %d elements exceed MPI's int count", len(buf))
	}
	if rc := C.raw_allreduce_f32(unsafe.Pointer(&buf[0]), C.int(len(buf))); rc != 0 {
		return fmt.Errorf("mpiraw: MPI_Allreduce failed (error %d)", int(rc))
	}
	return nil
}

// Barrier is MPI_Barrier on MPI_COMM_WORLD.
func Barrier() error {
	if rc := C.raw_barrier(); rc != 0 {
		return fmt.Errorf("mpiraw: MPI_Barrier failed (error %d)", int(rc))
	}
	return nil
}
