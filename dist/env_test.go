package dist

import (
	"strings"
	"testing"
)

func TestEnvFrom(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    Env
		wantErr string
	}{
		{name: "none", env: nil, want: Env{WorldSize: 1, LocalWorldSize: 1, Launcher: "single", MasterAddr: "127.0.0.1", MasterPort: 29500}},
		{name: "torchrun", env: map[string]string{"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "1234", "TORCHELASTIC_RUN_ID": "j1"},
			want: Env{Rank: 3, WorldSize: 4, LocalRank: 1, LocalWorldSize: 2, MasterAddr: "10.0.0.1", MasterPort: 1234, Launcher: "torchrun", RunID: "j1"}},
		{name: "gotpu-run", env: map[string]string{"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2", "GOTPU_STORE_SERVED": "1", "GOTPU_RUN_ID": "r7"},
			want: Env{Rank: 1, WorldSize: 2, LocalRank: 1, LocalWorldSize: 2, MasterAddr: "127.0.0.1", MasterPort: 29500, Launcher: "torchrun", StoreServed: true, RunID: "r7"}},
		{name: "launcher-store", env: map[string]string{"RANK": "0", "WORLD_SIZE": "2", "GOTPU_STORE_ADDR": "127.0.0.1:4000"},
			want: Env{Rank: 0, WorldSize: 2, MasterAddr: "127.0.0.1", MasterPort: 29500, Launcher: "torchrun", StoreServed: true, StoreAddr: "127.0.0.1:4000"}},
		{name: "slurm", env: map[string]string{"SLURM_PROCID": "5", "SLURM_NTASKS": "8", "SLURM_LOCALID": "1", "SLURM_NTASKS_PER_NODE": "4(x2)", "MASTER_ADDR": "node1"},
			want: Env{Rank: 5, WorldSize: 8, LocalRank: 1, LocalWorldSize: 4, MasterAddr: "node1", MasterPort: 29500, Launcher: "slurm"}},
		{name: "slurm-one-node", env: map[string]string{"SLURM_PROCID": "1", "SLURM_NTASKS": "2", "SLURM_LOCALID": "1", "SLURM_NNODES": "1"},
			want: Env{Rank: 1, WorldSize: 2, LocalRank: 1, LocalWorldSize: 2, MasterAddr: "127.0.0.1", MasterPort: 29500, Launcher: "slurm"}},
		{name: "slurm-job-port", env: map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_NNODES": "1", "SLURM_JOB_ID": "123456", "SLURM_STEP_ID": "0"},
			want: Env{Rank: 0, WorldSize: 2, LocalWorldSize: 2, MasterAddr: "127.0.0.1", MasterPort: 29500 + 1 + 123456%20000, Launcher: "slurm", RunID: "slurm-123456.0"}},
		{name: "openmpi", env: map[string]string{"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "3", "OMPI_COMM_WORLD_LOCAL_RANK": "2", "OMPI_COMM_WORLD_LOCAL_SIZE": "3"},
			want: Env{Rank: 2, WorldSize: 3, LocalRank: 2, LocalWorldSize: 3, MasterAddr: "127.0.0.1", MasterPort: 29500, Launcher: "openmpi"}},
		{name: "kubernetes", env: map[string]string{"JOB_COMPLETION_INDEX": "2", "WORLD_SIZE": "4", "MASTER_ADDR": "job-0.svc"},
			want: Env{Rank: 2, WorldSize: 4, LocalRank: 0, LocalWorldSize: 1, MasterAddr: "job-0.svc", MasterPort: 29500, Launcher: "kubernetes"}},
		{name: "kubernetes-gotpu-world", env: map[string]string{"JOB_COMPLETION_INDEX": "0", "GOTPU_WORLD_SIZE": "2"},
			want: Env{Rank: 0, WorldSize: 2, LocalRank: 0, LocalWorldSize: 1, MasterAddr: "127.0.0.1", MasterPort: 29500, Launcher: "kubernetes"}},
		{name: "kubernetes-no-world", env: map[string]string{"JOB_COMPLETION_INDEX": "0"}, wantErr: "not the world size (WORLD_SIZE or GOTPU_WORLD_SIZE)"},
		{name: "rank-too-big", env: map[string]string{"RANK": "2", "WORLD_SIZE": "2"}, wantErr: "rank 2 from torchrun is not below the world size 2"},
		{name: "bad-int", env: map[string]string{"RANK": "x", "WORLD_SIZE": "2"}, wantErr: `RANK="x"`},
		{name: "bad-port", env: map[string]string{"RANK": "0", "WORLD_SIZE": "1", "MASTER_PORT": "70000"}, wantErr: "not a TCP port"},
		{name: "local-rank", env: map[string]string{"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "2", "LOCAL_WORLD_SIZE": "2"}, wantErr: "local rank 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := EnvFrom(func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestMultiHost(t *testing.T) {
	tests := []struct {
		e    Env
		want bool
	}{
		{Env{WorldSize: 4, LocalWorldSize: 4}, false},
		{Env{WorldSize: 4, LocalWorldSize: 2}, true},
		{Env{WorldSize: 4, LocalWorldSize: 0}, false},
	}
	for _, tc := range tests {
		if got := tc.e.MultiHost(); got != tc.want {
			t.Errorf("%+v.MultiHost() = %v, want %v", tc.e, got, tc.want)
		}
	}
}
