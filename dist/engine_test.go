package dist

import (
	"strings"
	"testing"
)

func TestChooseEngine(t *testing.T) {
	mpiOr := func(without string) string {
		if mpiBuilt {
			return engineMPI
		}
		return without
	}
	noMPI := ""
	if !mpiBuilt {
		noMPI = "-tags gotpu_mpi"
	}
	tests := []struct {
		name, backend, envVar, launcher string
		want, err                       string
	}{
		{"default", "", "", "torchrun", engineSHM, ""},
		{"under-mpirun", "", "", "openmpi", mpiOr(engineSHM), ""},
		{"env-mpi", "", "mpi", "single", mpiOr(""), noMPI},
		{"env-shm-under-mpirun", "", "shm", "openmpi", engineSHM, ""},
		{"options-win-over-env", "shm", "mpi", "openmpi", engineSHM, ""},
		{"options-mpi", "mpi", "", "torchrun", mpiOr(""), noMPI},
		{"not-built", "nccl", "", "torchrun", "", `engine "nccl" is not built yet`},
		{"unknown", "tcp", "", "torchrun", "", "unknown engine"},
		{"unknown-env", "", "bogus", "torchrun", "", "from GOTPU_DIST_ENGINE"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOTPU_DIST_ENGINE", tc.envVar)
			got, err := chooseEngine(tc.backend, &Env{Launcher: tc.launcher})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("chooseEngine = %q, %v; want an error containing %q", got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("chooseEngine = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	if err := EngineAvailable("mpi"); (err == nil) != mpiBuilt {
		t.Errorf("EngineAvailable(mpi) = %v in a build with mpi %v", err, mpiBuilt)
	}
}
