//go:build !gotpu_mpi

package mpiraw

import "errors"

// Built reports whether this build has the package's functions (build tag
// gotpu_mpi).
const Built = false

var errNotBuilt = errors.New("mpiraw: built without the gotpu_mpi tag")

// AllReduceSumF32 needs a gotpu_mpi build.
func AllReduceSumF32([]float32) error { return errNotBuilt }

// Barrier needs a gotpu_mpi build.
func Barrier() error { return errNotBuilt }
