// Package dist runs one program as several processes that exchange tensors:
// torch.distributed's names and semantics (process groups, all_reduce,
// all_gather, reduce_scatter, broadcast, barrier, send/recv, all_to_all,
// async handles) over a built-in shared-memory engine for the processes of
// one host, a TCP rendezvous store, and DDP.
//
// Init reads the launcher's environment (gotpu run, torchrun, Slurm, Open
// MPI, Kubernetes indexed jobs). Every collective has a timeout: a rank that
// dies or never arrives, or ranks that issue different collectives, make the
// others return an error naming the ranks, the collective and its sequence
// number instead of hanging.
//
// Engines: the built-in one ("shm": processes on one host, through shared
// memory) and "mpi" (Open MPI, any number of hosts; cgo, build tag
// gotpu_mpi), chosen by Options.Backend, GOTPU_DIST_ENGINE, or Open MPI's
// environment in a build that has mpi. On the built-in engine a world
// spanning hosts is refused with an error naming the mpi engine.
//
// Environment, besides the launchers' variables: GOTPU_DIST_TIMEOUT (the
// collective timeout, a Go duration; default 30m), GOTPU_STORE_ADDR (a
// store the launcher serves; gotpu run sets it), GOTPU_RUN_ID (keeps the
// keys of restarted jobs apart), GOTPU_DIST_SLOT_BYTES (the shared-memory
// chunk size), GOTPU_DIST_ENGINE ("shm" or "mpi").
//
// Ranks of a group are numbered within the group: Broadcast's src and
// Send/Recv's peers are group ranks (GlobalRank maps them), and a group's
// collectives must be called in the same order on all its ranks, as in
// torch.distributed.
package dist

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Env is a process's place in a job, as its launcher describes it.
type Env struct {
	Rank           int    `json:"rank"`
	WorldSize      int    `json:"world_size"`
	LocalRank      int    `json:"local_rank"`
	LocalWorldSize int    `json:"local_world_size"` // processes on this host; 0 if unknown
	MasterAddr     string `json:"master_addr"`
	MasterPort     int    `json:"master_port"`
	// Launcher names where the values came from: "torchrun" (also gotpu
	// run), "slurm", "openmpi", "kubernetes" or "single" (no launcher).
	Launcher string `json:"launcher"`
	// StoreServed is true when the launcher serves the rendezvous store
	// (GOTPU_STORE_ADDR names it, or GOTPU_STORE_SERVED=1 puts it at
	// MasterAddr:MasterPort); otherwise rank 0 serves it at
	// MasterAddr:MasterPort.
	StoreServed bool   `json:"store_served"`
	StoreAddr   string `json:"store_addr,omitempty"`
	// RunID distinguishes restarts of one job (TORCHELASTIC_RUN_ID or
	// GOTPU_RUN_ID).
	RunID string `json:"run_id,omitempty"`
}

// DefaultMasterPort is the store's port when the environment names none
// (torchrun's default).
const DefaultMasterPort = 29500

// EnvFromOS is EnvFrom(os.Getenv).
func EnvFromOS() (Env, error) { return EnvFrom(os.Getenv) }

// EnvFrom reads a process's place in a job from environment variables
// (getenv is os.Getenv or a test's map). It tries, in order: torchrun's
// RANK/WORLD_SIZE (which gotpu run sets), Open MPI's OMPI_COMM_WORLD_*,
// Slurm's SLURM_PROCID/SLURM_NTASKS, and a Kubernetes indexed job's
// JOB_COMPLETION_INDEX with WORLD_SIZE (or GOTPU_WORLD_SIZE). With none of
// them it returns a world of one process. MASTER_ADDR and MASTER_PORT
// (default 127.0.0.1:29500; under Slurm the default port is derived from
// SLURM_JOB_ID so that jobs sharing a host differ) locate the store under
// every launcher.
func EnvFrom(getenv func(string) string) (Env, error) {
	e := Env{LocalWorldSize: 0}
	atoi := func(name string) (int, bool, error) {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return 0, false, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return 0, true, fmt.Errorf("dist: environment variable %s=%q is not a non-negative integer", name, v)
		}
		return n, true, nil
	}
	type src struct {
		launcher                           string
		rank, world, localRank, localWorld string
	}
	srcs := []src{
		{"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
		{"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
		{"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"},
		{"kubernetes", "JOB_COMPLETION_INDEX", "", "", ""},
	}
	found := false
	for _, s := range srcs {
		r, ok, err := atoi(s.rank)
		if err != nil {
			return Env{}, err
		}
		if !ok {
			continue
		}
		found = true
		e.Launcher, e.Rank = s.launcher, r
		worldVars := []string{s.world}
		if s.launcher == "kubernetes" {
			worldVars = []string{"WORLD_SIZE", "GOTPU_WORLD_SIZE"}
		}
		gotWorld := false
		for _, wv := range worldVars {
			w, ok, err := atoi(wv)
			if err != nil {
				return Env{}, err
			}
			if ok {
				e.WorldSize, gotWorld = w, true
				break
			}
		}
		if !gotWorld {
			return Env{}, fmt.Errorf("dist: %s sets the rank (%s) but not the world size (%s)", s.launcher, s.rank, strings.Join(worldVars, " or "))
		}
		if s.localRank != "" {
			if lr, ok, err := atoi(s.localRank); err != nil {
				return Env{}, err
			} else if ok {
				e.LocalRank = lr
			}
		}
		if s.localWorld != "" {
			v := getenv(s.localWorld)
			if s.launcher == "slurm" {
				// SLURM_NTASKS_PER_NODE may read "2" or "2(x3)"; the first count applies.
				if i := strings.IndexAny(v, "(,"); i >= 0 {
					v = v[:i]
				}
			}
			if v = strings.TrimSpace(v); v != "" {
				n, err := strconv.Atoi(v)
				if err != nil || n <= 0 {
					return Env{}, fmt.Errorf("dist: environment variable %s=%q is not a positive integer", s.localWorld, v)
				}
				e.LocalWorldSize = n
			}
		}
		if s.launcher == "slurm" && e.LocalWorldSize == 0 {
			if nn, ok, _ := atoi("SLURM_NNODES"); ok && nn == 1 {
				e.LocalWorldSize = e.WorldSize
			}
		}
		if s.launcher == "kubernetes" {
			// One pod per index: each process is alone on its host.
			e.LocalRank, e.LocalWorldSize = 0, 1
			if e.WorldSize == 1 {
				e.LocalWorldSize = 1
			}
		}
		break
	}
	if !found {
		e = Env{Rank: 0, WorldSize: 1, LocalRank: 0, LocalWorldSize: 1, Launcher: "single"}
	}
	if e.WorldSize < 1 {
		return Env{}, fmt.Errorf("dist: world size %d from %s must be at least 1", e.WorldSize, e.Launcher)
	}
	if e.Rank >= e.WorldSize {
		return Env{}, fmt.Errorf("dist: rank %d from %s is not below the world size %d", e.Rank, e.Launcher, e.WorldSize)
	}
	if e.LocalWorldSize > 0 && e.LocalRank >= e.LocalWorldSize {
		return Env{}, fmt.Errorf("dist: local rank %d from %s is not below the local world size %d", e.LocalRank, e.Launcher, e.LocalWorldSize)
	}
	e.MasterAddr = strings.TrimSpace(getenv("MASTER_ADDR"))
	if e.MasterAddr == "" {
		e.MasterAddr = "127.0.0.1"
	}
	e.MasterPort = DefaultMasterPort
	if e.Launcher == "slurm" {
		// Jobs sharing a host get different default ports.
		if id, ok, _ := atoi("SLURM_JOB_ID"); ok {
			e.MasterPort = DefaultMasterPort + 1 + id%20000
		}
	}
	if p, ok, err := atoi("MASTER_PORT"); err != nil {
		return Env{}, err
	} else if ok {
		if p == 0 || p > 65535 {
			return Env{}, fmt.Errorf("dist: MASTER_PORT=%d is not a TCP port", p)
		}
		e.MasterPort = p
	}
	e.StoreServed = getenv("GOTPU_STORE_SERVED") == "1"
	if a := strings.TrimSpace(getenv("GOTPU_STORE_ADDR")); a != "" {
		e.StoreServed, e.StoreAddr = true, a
	}
	e.RunID = getenv("GOTPU_RUN_ID")
	if e.RunID == "" {
		e.RunID = getenv("TORCHELASTIC_RUN_ID")
	}
	if e.RunID == "" && e.Launcher == "slurm" && getenv("SLURM_JOB_ID") != "" {
		e.RunID = "slurm-" + getenv("SLURM_JOB_ID") + "." + getenv("SLURM_STEP_ID")
	}
	return e, nil
}

// MultiHost reports whether the world spans more than one host, as far as
// the environment tells (the local world is smaller than the world).
func (e Env) MultiHost() bool {
	return e.LocalWorldSize > 0 && e.LocalWorldSize < e.WorldSize
}
