package dist

import (
	"fmt"
	"os"
	"strings"

	"github.com/gotpu/gotpu/dtype"
)

// engine moves the bytes of a Group's collectives. The Group validates
// arguments, numbers the collectives (call), reaches the tensors' memory
// and turns failures into an aborted group; an engine only moves and
// reduces bytes, reporting a peer that died, never arrived or called a
// different collective as an *Error built with Group.errorf.
//
// Two engines exist: the built-in shared-memory one (shmEngine, the
// Group's own methods) and "mpi" (mpi.go, build tag gotpu_mpi).
type engine interface {
	// begin publishes collective c's descriptor for the mismatch check.
	begin(c *call)
	// abort tells the peers that this rank failed the group with err.
	abort(err error)
	allReduce(c *call, buf []byte, dt dtype.DType, op ReduceOp) error
	// reduce leaves the result in dst's buf only.
	reduce(c *call, buf []byte, dt dtype.DType, op ReduceOp, dst int) error
	broadcast(c *call, buf []byte, src int) error
	barrier(c *call) error
	allGather(c *call, in []byte, out [][]byte) error
	// gather fills out on dst only (out is nil elsewhere).
	gather(c *call, in []byte, out [][]byte, dst int) error
	// scatter sends in[r] of src to rank r's out (in is nil off src).
	scatter(c *call, in [][]byte, out []byte, src, es int) error
	reduceScatter(c *call, in [][]byte, out []byte, dt dtype.DType, op ReduceOp) error
	allToAll(c *call, in, out [][]byte, es int) error
	// send and recv move one tensor; desc ("float32[2,3]") is checked
	// against the receiver's.
	send(c *call, buf []byte, dst int, desc string) error
	recv(c *call, buf []byte, src int, desc string) error
	// close releases the engine's resources of the group.
	close()
}

// Engine names.
const (
	engineSHM = "shm"
	engineMPI = "mpi"
)

// chooseEngine picks the engine: opts.Backend, else GOTPU_DIST_ENGINE,
// else mpi when Open MPI launched the job and this build has the mpi
// engine, else the built-in one.
func chooseEngine(backend string, env *Env) (string, error) {
	src := "dist.Options.Backend"
	if backend == "" {
		backend, src = strings.TrimSpace(os.Getenv("GOTPU_DIST_ENGINE")), "GOTPU_DIST_ENGINE"
	}
	switch backend {
	case "":
		if mpiBuilt && env != nil && env.Launcher == "openmpi" {
			return engineMPI, nil
		}
		return engineSHM, nil
	case engineSHM:
		return engineSHM, nil
	case engineMPI:
		if !mpiBuilt {
			return "", fmt.Errorf("dist: engine \"mpi\" (from %s) is not in this build: build with -tags gotpu_mpi (cgo and Open MPI's libopenmpi-dev; tools/mpi/install.sh)", src)
		}
		return engineMPI, nil
	case "xla", "nccl", "gloo":
		return "", fmt.Errorf("dist: engine %q is not built yet (asked for by %s); built: shm (processes on one host) and mpi (build tag gotpu_mpi)", backend, src)
	}
	return "", fmt.Errorf("dist: unknown engine %q from %s (shm, mpi)", backend, src)
}

// shmEngine is the built-in shared-memory engine: the Group's own
// lock-step methods over its segment.
type shmEngine struct{ g *Group }

func (e shmEngine) begin(c *call)   { e.g.seg.writeDesc(e.g.rank, c.seq, c.desc) }
func (e shmEngine) abort(err error) { e.g.seg.setAbort(e.g.rank, err.Error()) }
func (e shmEngine) allReduce(c *call, buf []byte, dt dtype.DType, op ReduceOp) error {
	return e.g.allReduceBytes(c, buf, dt, op, true)
}
func (e shmEngine) reduce(c *call, buf []byte, dt dtype.DType, op ReduceOp, dst int) error {
	// Off dst, without the copy-out, the reduction only reads buf.
	return e.g.allReduceBytes(c, buf, dt, op, e.g.rank == dst)
}
func (e shmEngine) broadcast(c *call, buf []byte, src int) error {
	return e.g.broadcastBytes(c, buf, src)
}
func (e shmEngine) barrier(c *call) error { return e.g.step(c) }
func (e shmEngine) allGather(c *call, in []byte, out [][]byte) error {
	return e.g.allGatherBytes(c, in, out)
}
func (e shmEngine) gather(c *call, in []byte, out [][]byte, _ int) error {
	return e.g.allGatherBytes(c, in, out)
}
func (e shmEngine) scatter(c *call, in [][]byte, out []byte, src, es int) error {
	return e.g.scatterBytes(c, in, out, src, es)
}
func (e shmEngine) reduceScatter(c *call, in [][]byte, out []byte, dt dtype.DType, op ReduceOp) error {
	return e.g.reduceScatterBytes(c, in, out, dt, op)
}
func (e shmEngine) allToAll(c *call, in, out [][]byte, es int) error {
	return e.g.allToAllBytes(c, in, out, es)
}
func (e shmEngine) send(c *call, buf []byte, dst int, desc string) error {
	return e.g.sendBytes(c, buf, dst, desc)
}
func (e shmEngine) recv(c *call, buf []byte, src int, desc string) error {
	return e.g.recvBytes(c, buf, src, desc)
}
func (e shmEngine) close() {
	if e.g.seg != nil {
		e.g.seg.u32(e.g.seg.ctl(e.g.rank) + ctlState).Store(stateClosed)
		e.g.seg.unmap()
	}
}

// EngineAvailable returns nil when this build runs engine ("shm", "mpi",
// or "" for the default), else an error saying why not (for mpi: the
// build tag it needs).
func EngineAvailable(engine string) error {
	if engine == "" {
		return nil
	}
	_, err := chooseEngine(engine, nil)
	return err
}
