//go:build gotpu_mpi

package dist

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gotpu/gotpu/internal/testreq"
)

// The mpi engine's tests run the test binary as the ranks of an Open MPI
// job (mpirun, with the roles of roles_test.go), so that the engine runs
// exactly as users run it.

func mpirunPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("mpirun")
	if err != nil {
		testreq.Missing(t, "mpirun not found: tools/mpi/install.sh installs Open MPI")
	}
	return p
}

// mpiArgs are mpirun's options for the tests: root in containers, more
// ranks than cores, and survivors of a dead rank left running (plain
// mpirun kills the whole job when a rank dies or exits non-zero, before
// the others can report).
var mpiArgs = []string{"--allow-run-as-root", "--oversubscribe", "--enable-recovery",
	"--mca", "orte_abort_on_non_zero_status", "0", "--tag-output"}

var tagLine = regexp.MustCompile(`^\[\d+,(\d+)\]<std(?:out|err)>:(.*)$`)

// spawnMPI runs role on n ranks under mpirun and returns each rank's
// output; env are NAME=value pairs for every rank.
func spawnMPI(t *testing.T, n int, role string, limit time.Duration, env ...string) []rankResult {
	t.Helper()
	mpirun := mpirunPath(t)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	args := append([]string{}, mpiArgs...)
	args = append(args, "-np", strconv.Itoa(n))
	for _, kv := range append([]string{"GOTPU_DIST_ROLE=" + role, "GOTPU_DIST_ENGINE=mpi"}, env...) {
		args = append(args, "-x", kv)
	}
	args = append(args, os.Args[0], "-test.run=^$")
	cmd := exec.CommandContext(ctx, mpirun, args...)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	start := time.Now()
	cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("mpirun of role %s did not finish within %v (a hang):\n%s", role, limit, buf.String())
	}
	res := parseTagged(buf.Bytes(), n)
	for r := range res {
		res[r].dur = time.Since(start)
	}
	return res
}

// parseTagged splits mpirun --tag-output's lines by rank; a rank's code
// is 0 after "OK", 3 after "ERROR:", 2 after "INIT ERROR:", else -1.
func parseTagged(out []byte, n int) []rankResult {
	res := make([]rankResult, n)
	for r := range res {
		res[r] = rankResult{rank: r, code: -1}
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		m := tagLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		r, _ := strconv.Atoi(m[1])
		if r >= n {
			continue
		}
		res[r].out += m[2] + "\n"
		switch {
		case strings.HasPrefix(m[2], "OK"):
			res[r].code = 0
		case strings.HasPrefix(m[2], "ERROR:"):
			res[r].code = 3
		case strings.HasPrefix(m[2], "INIT ERROR:"):
			res[r].code = 2
		}
	}
	return res
}

func TestMPICollectives(t *testing.T) {
	tests := []struct {
		ranks int
		chunk string // GOTPU_MPI_CHUNK_BYTES: all-reduces in several MPI calls
		xchg  string // GOTPU_MPI_XCHG_RANKS: 0 runs small all-reduces through MPI_Iallreduce
	}{
		{2, "", ""}, {3, "1024", "0"}, {4, "", ""}, {2, "", "0"},
	}
	if testing.Short() {
		tests = tests[:2]
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%d-ranks-chunk-%s-xchg-%s", tc.ranks, tc.chunk, tc.xchg), func(t *testing.T) {
			for _, r := range spawnMPI(t, tc.ranks, "coll", 90*time.Second, "GOTPU_MPI_CHUNK_BYTES="+tc.chunk, "GOTPU_MPI_XCHG_RANKS="+tc.xchg) {
				if r.code != 0 {
					t.Errorf("rank %d exit %d:\n%s", r.rank, r.code, r.out)
				}
			}
		})
	}
}

// TestMPIGoSignals: after MPI_Init a nil dereference is still Go's panic.
func TestMPIGoSignals(t *testing.T) {
	for _, r := range spawnMPI(t, 2, "nil-deref", 60*time.Second) {
		if r.code != 0 {
			t.Errorf("rank %d exit %d:\n%s", r.rank, r.code, r.out)
		}
	}
}

func TestMPIDDP(t *testing.T) {
	for _, r := range spawnMPI(t, 2, "ddp", 90*time.Second) {
		if r.code != 0 {
			t.Errorf("rank %d exit %d:\n%s", r.rank, r.code, r.out)
		}
	}
}

// TestMPIKillRank: MPI itself would wait forever for a SIGKILLed rank;
// every survivor must return an error naming it, in every trial.
func TestMPIKillRank(t *testing.T) {
	trials := 6
	if testing.Short() {
		trials = 3
	}
	for i := range trials {
		victim := 1 + i%2
		res := spawnMPI(t, 3, "kill", 60*time.Second, "GOTPU_DIST_VICTIM="+strconv.Itoa(victim),
			"GOTPU_DIST_DELAY_US="+strconv.Itoa(i*137%1000), "GOTPU_DIST_TEST_TIMEOUT_MS=20000")
		for _, r := range res {
			if r.rank == victim {
				continue
			}
			want := fmt.Sprintf("dead (rank %d): rank %d (pid", victim, victim)
			if r.code != 3 || !strings.Contains(r.out, want) || !strings.Contains(r.out, "all_reduce(sum) f32[262144] #") {
				t.Errorf("trial %d: rank %d exit %d, want an error naming %q and the collective:\n%s", i, r.rank, r.code, want, r.out)
			}
		}
	}
}

func TestMPIMismatch(t *testing.T) {
	// Small all-reduces as point-to-point exchanges (2 ranks), and as
	// MPI_Iallreduce with the hash inside (GOTPU_MPI_XCHG_RANKS=0).
	for _, xchg := range []string{"", "0"} {
		for _, tc := range mismatchCases {
			t.Run(tc.role+"-xchg-"+xchg, func(t *testing.T) {
				checkMismatch(t, spawnMPI(t, 2, tc.role, 60*time.Second, "GOTPU_DIST_TEST_TIMEOUT_MS=5000", "GOTPU_MPI_XCHG_RANKS="+xchg), tc.want)
			})
		}
	}
}

func TestMPINeverArrives(t *testing.T) {
	start := time.Now()
	res := spawnMPI(t, 2, "never", 60*time.Second, "GOTPU_DIST_TEST_TIMEOUT_MS=700")
	r := res[0]
	if r.code != 3 || !strings.Contains(r.out, "timeout (rank 1)") || !strings.Contains(r.out, "all_reduce(sum) f32[4] #0") {
		t.Fatalf("rank 0 exit %d, want a timeout naming rank 1:\n%s", r.code, r.out)
	}
	t.Logf("job took %v", time.Since(start))
}

func TestMPICanceledAndClosed(t *testing.T) {
	tests := []struct {
		role string
		want []string
	}{
		{"cancel", []string{"all_reduce(sum) f32[4] #0 in group world: canceled (rank 1)", "IS DEADLINE"}},
		{"close", []string{"barrier #0 in group world: closed (rank 1)"}},
	}
	for _, tc := range tests {
		t.Run(tc.role, func(t *testing.T) {
			r := spawnMPI(t, 2, tc.role, 60*time.Second, "GOTPU_DIST_TEST_TIMEOUT_MS=10000")[0]
			for _, w := range tc.want {
				if r.code != 3 || !strings.Contains(r.out, w) || strings.Contains(r.out, "BARRIER AFTER FAILURE") {
					t.Fatalf("rank 0 exit %d, want %q:\n%s", r.code, w, r.out)
				}
			}
		})
	}
}

// TestMPITwoHosts runs jobs across two "hosts" (network and UTS
// namespaces joined by a veth pair; tools/mpi/netns.sh): MPI over TCP, the
// store reached over the veth, and a dead rank on the other host found by
// its stopped heartbeat. It needs root and ip netns (a kernel capability,
// not a package), so it skips without them even in CI.
func TestMPITwoHosts(t *testing.T) {
	mpirunPath(t)
	script, err := filepath.Abs("../tools/mpi/netns.sh")
	if err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root for ip netns")
	}
	probe := exec.Command("ip", "netns", "add", "gotpu-probe")
	if out, err := probe.CombinedOutput(); err != nil {
		t.Skipf("ip netns is not usable here: %v %s", err, out)
	}
	exec.Command("ip", "netns", "del", "gotpu-probe").Run()
	run := func(role string, env ...string) []rankResult {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, script, os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "GOTPU_NETNS_ENV="+strings.Join(append([]string{"GOTPU_DIST_ROLE=" + role, "GOTPU_DIST_ENGINE=mpi"}, env...), " "))
		out, _ := cmd.CombinedOutput()
		if ctx.Err() != nil {
			t.Fatalf("role %s across two hosts did not finish (a hang):\n%s", role, out)
		}
		return parseTagged(out, 2)
	}
	for _, r := range run("coll") {
		if r.code != 0 {
			t.Errorf("coll: rank %d exit %d:\n%s", r.rank, r.code, r.out)
		}
	}
	if testing.Short() {
		return
	}
	r := run("kill", "GOTPU_DIST_VICTIM=1", "GOTPU_DIST_TEST_TIMEOUT_MS=20000")[0]
	if r.code != 3 || !strings.Contains(r.out, "dead (rank 1): rank 1 (pid") || !strings.Contains(r.out, "on h1) stopped its heartbeat") {
		t.Errorf("kill across hosts: rank 0 exit %d, want rank 1 dead by its heartbeat:\n%s", r.code, r.out)
	}
}
