//go:build !gotpu_mpi

package dist

import (
	"context"
	"errors"
)

// mpiBuilt reports whether this build has the mpi engine (build tag
// gotpu_mpi).
const mpiBuilt = false

var errNoMPI = errors.New(`dist: engine "mpi" is not in this build: build with -tags gotpu_mpi (cgo and Open MPI's libopenmpi-dev; tools/mpi/install.sh)`)

// mpiWorld is the mpi engine's per-process state (none in this build).
type mpiWorld struct{}

func initMPI(context.Context, Options, Env) (*Group, error) { return nil, errNoMPI }

func (w *world) newMPIGroup(context.Context, *Group, string, string, []int) (*Group, error) {
	return nil, errNoMPI
}
