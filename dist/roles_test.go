package dist

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/gotpu/gotpu/backend/cpu"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/tensor"
)

var cpu = tensor.MustDevice("cpu")

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

// moreRoles are the roles other test files add (role name to its main).
var moreRoles = map[string]func(context.Context, *Group) error{}

// runRole is a rank's main in subprocess tests.
func runRole(role string) int {
	ctx := context.Background()
	opts := Options{SlotBytes: envInt("GOTPU_DIST_TEST_SLOT", 0), P2PBytes: envInt("GOTPU_DIST_TEST_P2P", 0),
		Timeout: time.Duration(envInt("GOTPU_DIST_TEST_TIMEOUT_MS", 20000)) * time.Millisecond}
	g, err := Init(ctx, opts)
	if err != nil {
		fmt.Println("INIT ERROR:", err)
		return 2
	}
	defer g.Close()
	var rerr error
	switch role {
	case "coll":
		rerr = roleCollectives(ctx, g)
	case "ddp":
		rerr = roleDDP(ctx, g)
	case "tp":
		rerr = roleTP(ctx, g)
	case "tpgrad":
		rerr = roleTPGrad(ctx, g)
	case "kill":
		rerr = roleKill(ctx, g)
	case "never":
		if g.Rank() == 1 {
			time.Sleep(1500 * time.Millisecond)
			return 0
		}
		start := time.Now()
		rerr = g.AllReduce(ctx, tensor.Ones(cpu, dtype.F32, 4), Sum)
		fmt.Printf("ELAPSED %v\n", time.Since(start))
	case "cancel":
		if g.Rank() == 1 {
			time.Sleep(time.Second)
			return 0
		}
		cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		rerr = g.AllReduceAsync(cctx, tensor.Ones(cpu, dtype.F32, 4), Sum).Wait(ctx)
		if errors.Is(rerr, context.DeadlineExceeded) {
			fmt.Println("IS DEADLINE")
		}
		// The group is unusable after a failed collective.
		if err := g.Barrier(ctx); !errors.Is(err, ErrAborted) {
			fmt.Println("BARRIER AFTER FAILURE:", err)
		}
	case "close":
		if g.Rank() == 1 {
			return 0 // the deferred Close leaves the group
		}
		rerr = g.Barrier(ctx)
	case "mismatch":
		if g.Rank() == 0 {
			rerr = g.AllReduce(ctx, tensor.Ones(cpu, dtype.F32, 8), Sum)
		} else {
			rerr = g.AllReduce(ctx, tensor.Ones(cpu, dtype.F32, 2, 8), Sum)
		}
	case "nil-deref":
		// Go turns a nil dereference into a panic through its SIGSEGV
		// handler, which an engine (MPI installs its own) must leave alone.
		rerr = func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = g.Barrier(ctx)
				}
			}()
			var p *int
			fmt.Println(*p)
			return errors.New("no panic")
		}()
	case "mismatch-kind":
		// The same bytes, a different collective: MPI alone would
		// complete both calls.
		if g.Rank() == 0 {
			rerr = g.AllReduce(ctx, tensor.Ones(cpu, dtype.F32, 8), Sum)
		} else {
			rerr = g.Broadcast(ctx, tensor.Ones(cpu, dtype.F32, 8), 0)
		}
	default:
		if fn, ok := moreRoles[role]; ok {
			rerr = fn(ctx, g)
		} else {
			rerr = fmt.Errorf("unknown role %q", role)
		}
	}
	if rerr != nil {
		fmt.Println("ERROR:", rerr)
		return 3
	}
	fmt.Println("OK")
	return 0
}

// input is rank r's deterministic test data: small integers, exact in
// every dtype.
func input(r, n int, dt dtype.DType) *tensor.Tensor {
	v := make([]float64, n)
	for i := range v {
		v[i] = float64((r+1)*(i%5+1)) - 3
	}
	return tensor.FromSlice(cpu, v).ToDType(dt)
}

func expectReduce(n, size int, op ReduceOp) []float64 {
	out := make([]float64, n)
	for i := range out {
		acc := 0.0
		for r := range size {
			x := float64((r+1)*(i%5+1)) - 3
			switch {
			case r == 0:
				acc = x
			case op == Sum || op == Avg:
				acc += x
			case op == Max:
				acc = math.Max(acc, x)
			case op == Min:
				acc = math.Min(acc, x)
			case op == Prod:
				acc *= x
			}
		}
		if op == Avg {
			acc /= float64(size)
		}
		out[i] = acc
	}
	return out
}

func same(what string, got, want []float64, tol float64) error {
	if len(got) != len(want) {
		return fmt.Errorf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > tol*math.Max(1, math.Abs(want[i])) {
			return fmt.Errorf("%s: [%d] = %v, want %v", what, i, got[i], want[i])
		}
	}
	return nil
}

func roleCollectives(ctx context.Context, g *Group) error {
	N, me := g.Size(), g.Rank()
	// Sizes straddle the (small, test-set) slot: several chunks each.
	for _, n := range []int{0, 1, 7, 1000, 5000} {
		for _, dt := range []dtype.DType{dtype.F32, dtype.F64, dtype.BF16, dtype.F16, dtype.I64, dtype.I32, dtype.I16} {
			for _, op := range []ReduceOp{Sum, Avg, Max, Min, Prod} {
				if op == Avg && !dt.IsFloat() {
					continue
				}
				if op == Prod && n > 7 {
					continue
				}
				x := input(me, n, dt)
				if err := g.AllReduce(ctx, x, op); err != nil {
					return err
				}
				tol := 0.0
				if dt == dtype.BF16 || dt == dtype.F16 {
					tol = 1e-2
				}
				if err := same(fmt.Sprintf("all_reduce %s %s[%d]", op, dt, n), x.Float64s(), expectReduce(n, N, op), tol); err != nil {
					return err
				}
			}
		}
	}
	// A non-contiguous view: the copy-in/copy-out fallback writes through
	// the view into its base.
	base := input(me, 12, dtype.F32).Reshape(3, 4)
	view := base.Transpose(0, 1)
	if err := g.AllReduce(ctx, view, Sum); err != nil {
		return err
	}
	if err := same("all_reduce of a transposed view", base.Float64s(), expectReduce(12, N, Sum), 0); err != nil {
		return err
	}
	// Broadcast from every root.
	for src := range N {
		x := input(me, 3000, dtype.F32)
		if err := g.Broadcast(ctx, x, src); err != nil {
			return err
		}
		if err := same("broadcast", x.Float64s(), input(src, 3000, dtype.F32).Float64s(), 0); err != nil {
			return err
		}
	}
	// AllGather.
	outs := make([]*tensor.Tensor, N)
	for r := range outs {
		outs[r] = tensor.Zeros(cpu, dtype.F64, 2, 1500)
	}
	if err := g.AllGather(ctx, outs, input(me, 3000, dtype.F64).Reshape(2, 1500)); err != nil {
		return err
	}
	for r := range outs {
		if err := same(fmt.Sprintf("all_gather[%d]", r), outs[r].Float64s(), input(r, 3000, dtype.F64).Float64s(), 0); err != nil {
			return err
		}
	}
	// ReduceScatter: ins[q] of rank r is input(r)+q; out = sum_r input(r) + N*me.
	ins := make([]*tensor.Tensor, N)
	for q := range ins {
		ins[q] = input(me, 2000, dtype.F32).AddScalar(float64(q))
	}
	out := tensor.Zeros(cpu, dtype.F32, 2000)
	if err := g.ReduceScatter(ctx, out, ins, Sum); err != nil {
		return err
	}
	want := expectReduce(2000, N, Sum)
	for i := range want {
		want[i] += float64(N * me)
	}
	if err := same("reduce_scatter", out.Float64s(), want, 0); err != nil {
		return err
	}
	// Rooted forms: reduce, gather and scatter to/from the last rank.
	root := N - 1
	rx := input(me, 3000, dtype.F32)
	if err := g.Reduce(ctx, rx, root, Max); err != nil {
		return err
	}
	wantR := input(me, 3000, dtype.F32).Float64s()
	if me == root {
		wantR = expectReduce(3000, N, Max)
	}
	if err := same("reduce", rx.Float64s(), wantR, 0); err != nil {
		return err
	}
	var gouts []*tensor.Tensor
	if me == root {
		for range N {
			gouts = append(gouts, tensor.Zeros(cpu, dtype.I32, 3000))
		}
	}
	if err := g.Gather(ctx, gouts, input(me, 3000, dtype.I32), root); err != nil {
		return err
	}
	for r, o := range gouts {
		if err := same(fmt.Sprintf("gather[%d]", r), o.Float64s(), input(r, 3000, dtype.I32).Float64s(), 0); err != nil {
			return err
		}
	}
	var sins []*tensor.Tensor
	if me == root {
		for q := range N {
			sins = append(sins, input(q+10, 3000, dtype.F64))
		}
	}
	sx := tensor.Zeros(cpu, dtype.F64, 3000)
	if err := g.Scatter(ctx, sx, sins, root); err != nil {
		return err
	}
	if err := same("scatter", sx.Float64s(), input(me+10, 3000, dtype.F64).Float64s(), 0); err != nil {
		return err
	}
	// The flat forms: all_gather_into_tensor and reduce_scatter_tensor.
	flat := tensor.Zeros(cpu, dtype.F32, N*1000)
	if err := g.AllGatherInto(ctx, flat, input(me, 1000, dtype.F32)); err != nil {
		return err
	}
	var wantFlat []float64
	for r := range N {
		wantFlat = append(wantFlat, input(r, 1000, dtype.F32).Float64s()...)
	}
	if err := same("all_gather_into_tensor", flat.Float64s(), wantFlat, 0); err != nil {
		return err
	}
	part := tensor.Zeros(cpu, dtype.F32, 1000)
	if err := g.ReduceScatterTensor(ctx, part, input(me, N*1000, dtype.F32), Sum); err != nil {
		return err
	}
	if err := same("reduce_scatter_tensor", part.Float64s(), expectReduce(N*1000, N, Sum)[me*1000:(me+1)*1000], 0); err != nil {
		return err
	}
	// AllToAll: ins[q] of rank r is input(r)*10+q; outs[r] = input(r)*10+me.
	for q := range ins {
		ins[q] = input(me, 2000, dtype.I64).MulScalar(10).AddScalar(q)
		outs[q] = tensor.Zeros(cpu, dtype.I64, 2000)
	}
	if err := g.AllToAll(ctx, outs, ins); err != nil {
		return err
	}
	for r := range outs {
		w := input(r, 2000, dtype.I64).MulScalar(10).AddScalar(me).Float64s()
		if err := same(fmt.Sprintf("all_to_all[%d]", r), outs[r].Float64s(), w, 0); err != nil {
			return err
		}
	}
	// Send/Recv around a ring, larger than a p2p slot.
	next, prev := (me+1)%N, (me+N-1)%N
	x := input(me, 3000, dtype.F32)
	y := tensor.Zeros(cpu, dtype.F32, 3000)
	sw := g.SendAsync(ctx, x, next)
	if err := g.Recv(ctx, y, prev); err != nil {
		return err
	}
	if err := sw.Wait(ctx); err != nil {
		return err
	}
	if err := same("recv", y.Float64s(), input(prev, 3000, dtype.F32).Float64s(), 0); err != nil {
		return err
	}
	// Async all-reduces queued back to back, then waited.
	var ws []*Work
	var xs []*tensor.Tensor
	for range 4 {
		x := input(me, 1000, dtype.F32)
		xs = append(xs, x)
		ws = append(ws, g.AllReduceAsync(ctx, x, Sum))
	}
	for i, w := range ws {
		if err := w.Wait(ctx); err != nil {
			return err
		}
		if err := same(fmt.Sprintf("async all_reduce %d", i), xs[i].Float64s(), expectReduce(1000, N, Sum), 0); err != nil {
			return err
		}
	}
	// Subgroups: the first and last rank; and Split by parity.
	sub, err := g.NewGroup(ctx, []int{0, N - 1})
	if err != nil {
		return err
	}
	if (me == 0 || me == N-1) != (sub != nil) {
		return fmt.Errorf("new_group membership of rank %d: %v", me, sub != nil)
	}
	if sub != nil {
		x := tensor.FromSlice(cpu, []float32{float32(me)})
		if err := sub.AllReduce(ctx, x, Sum); err != nil {
			return err
		}
		if x.Item() != float64(N-1) {
			return fmt.Errorf("new_group all_reduce = %v, want %d", x.Item(), N-1)
		}
	}
	half, err := g.Split(ctx, me%2, -me)
	if err != nil {
		return err
	}
	x = tensor.FromSlice(cpu, []float32{float32(me)})
	if err := half.AllReduce(ctx, x, Sum); err != nil {
		return err
	}
	wantSum := 0
	for r := me % 2; r < N; r += 2 {
		wantSum += r
	}
	if x.Item() != float64(wantSum) || half.GlobalRank(0) < half.GlobalRank(half.Size()-1) {
		return fmt.Errorf("split all_reduce = %v (ranks %v), want %d in descending key order", x.Item(), half.Ranks(), wantSum)
	}
	// Max over bool and u8.
	b := tensor.FromSlice(cpu, []bool{me == 1, false})
	if err := g.AllReduce(ctx, b, Max); err != nil {
		return err
	}
	if err := same("bool max", b.Float64s(), []float64{1, 0}, 0); err != nil {
		return err
	}
	return g.Barrier(ctx)
}

// roleKill runs all-reduces until one fails; the victim rank kills itself
// with SIGKILL in the middle of one.
func roleKill(ctx context.Context, g *Group) error {
	victim := envInt("GOTPU_DIST_VICTIM", 1)
	delay := time.Duration(envInt("GOTPU_DIST_DELAY_US", 0)) * time.Microsecond
	x := tensor.Ones(cpu, dtype.F32, 1<<18)
	for i := 0; ; i++ {
		w := g.AllReduceAsync(ctx, x, Sum)
		if g.Rank() == victim && i == 3 {
			time.Sleep(delay)
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
		if err := w.Wait(ctx); err != nil {
			return err
		}
	}
}

func TestCollectives(t *testing.T) {
	tests := []struct {
		name  string
		ranks int
		slot  string
	}{
		{"2-ranks-small-slots", 2, "4096"},
		{"3-ranks-small-slots", 3, "4096"},
		{"2-ranks-default-slots", 2, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expectOK(t, spawn(t, tc.ranks, "coll", 60*time.Second, func(int) []string {
				return []string{"GOTPU_DIST_TEST_SLOT=" + tc.slot, "GOTPU_DIST_TEST_P2P=" + tc.slot}
			}))
		})
	}
}

// TestKillRankMidCollective: the survivors of a SIGKILLed rank must fail
// fast, naming it, in every trial (no hangs).
func TestKillRankMidCollective(t *testing.T) {
	trials := 20
	if testing.Short() {
		trials = 5
	}
	var slowest time.Duration
	defer func() { t.Logf("%d trials; slowest survivor exited %v after its start", trials, slowest) }()
	for i := range trials {
		victim := 1 + i%2
		res := spawn(t, 3, "kill", 30*time.Second, func(int) []string {
			return []string{"GOTPU_DIST_VICTIM=" + strconv.Itoa(victim), "GOTPU_DIST_DELAY_US=" + strconv.Itoa(i*137%1000),
				"GOTPU_DIST_TEST_SLOT=65536", "GOTPU_DIST_TEST_TIMEOUT_MS=20000"}
		})
		for _, r := range res {
			if r.rank == victim {
				if r.code != -1 {
					t.Errorf("trial %d: victim rank %d exited %d, want killed", i, victim, r.code)
				}
				continue
			}
			want := fmt.Sprintf("rank %d", victim)
			if r.code != 3 || !strings.Contains(r.out, want) || !strings.Contains(r.out, "all_reduce(sum) f32[262144] #") {
				t.Errorf("trial %d: rank %d exit %d, want an error naming %q and the collective:\n%s", i, r.rank, r.code, want, r.out)
			}
			slowest = max(slowest, r.dur)
			if r.dur > 10*time.Second {
				t.Errorf("trial %d: rank %d took %v to notice the dead rank", i, r.rank, r.dur)
			}
		}
	}
}

// TestRank0ServesStore runs a job without a launcher-served store: rank 0
// serves it at MASTER_ADDR:MASTER_PORT (gotpu dist env, torchrun).
func TestRank0ServesStore(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	res := spawn(t, 2, "mismatch", 30*time.Second, func(int) []string {
		return []string{"GOTPU_STORE_SERVED=0", "MASTER_PORT=" + port, "GOTPU_DIST_TEST_TIMEOUT_MS=5000"}
	})
	for _, r := range res {
		// The mismatch role proves both ranks met in one group.
		if r.code != 3 || !strings.Contains(r.out, "mismatch") {
			t.Errorf("rank %d exit %d:\n%s", r.rank, r.code, r.out)
		}
	}
}

func TestRankNeverArrives(t *testing.T) {
	res := spawn(t, 2, "never", 30*time.Second, func(int) []string { return []string{"GOTPU_DIST_TEST_TIMEOUT_MS=700"} })
	r := res[0]
	if r.code != 3 || !strings.Contains(r.out, "timeout (rank 1)") || !strings.Contains(r.out, "all_reduce(sum) f32[4] #0") {
		t.Fatalf("rank 0 exit %d, want a timeout naming rank 1:\n%s", r.code, r.out)
	}
	// The process's whole life (start, rendezvous, the wait) on a loaded
	// host; the default timeout would be 20s here.
	if r.dur > 6*time.Second {
		t.Fatalf("rank 0 took %v with a 700ms timeout", r.dur)
	}
}

func TestCanceledAndClosed(t *testing.T) {
	tests := []struct {
		role string
		want []string
	}{
		{"cancel", []string{"all_reduce(sum) f32[4] #0 in group world: canceled (rank 1)", "IS DEADLINE"}},
		{"close", []string{"barrier #0 in group world: closed (rank 1)"}},
	}
	for _, tc := range tests {
		t.Run(tc.role, func(t *testing.T) {
			res := spawn(t, 2, tc.role, 30*time.Second, func(int) []string { return []string{"GOTPU_DIST_TEST_TIMEOUT_MS=10000"} })
			r := res[0]
			for _, w := range tc.want {
				if r.code != 3 || !strings.Contains(r.out, w) || strings.Contains(r.out, "BARRIER AFTER FAILURE") {
					t.Fatalf("rank 0 exit %d, want %q:\n%s", r.code, w, r.out)
				}
			}
			if r.dur > 5*time.Second {
				t.Fatalf("rank 0 took %v", r.dur)
			}
		})
	}
}

// mismatchCases are the roles whose two ranks call different collectives,
// and the calls each rank's error must quote.
var mismatchCases = []struct {
	role string
	want []string
}{
	{"mismatch", []string{"all_reduce(sum) f32[8]", "all_reduce(sum) f32[2,8]"}},
	{"mismatch-kind", []string{"all_reduce(sum) f32[8]", "broadcast(src=0) f32[8]"}},
}

func checkMismatch(t *testing.T, res []rankResult, want []string) {
	t.Helper()
	for _, r := range res {
		ok := r.code == 3 && strings.Contains(r.out, "mismatch")
		for _, w := range want {
			ok = ok && strings.Contains(r.out, w)
		}
		if !ok {
			t.Errorf("rank %d exit %d, want a mismatch naming %q:\n%s", r.rank, r.code, want, r.out)
		}
	}
}

func TestMismatchedCollectives(t *testing.T) {
	for _, tc := range mismatchCases {
		t.Run(tc.role, func(t *testing.T) {
			checkMismatch(t, spawn(t, 2, tc.role, 30*time.Second, func(int) []string { return []string{"GOTPU_DIST_TEST_TIMEOUT_MS=5000"} }), tc.want)
		})
	}
}

func TestInitRefusesMultiHost(t *testing.T) {
	tests := []struct {
		name    string
		env     Env
		backend string
		want    string
	}{
		{"two-hosts", Env{Rank: 0, WorldSize: 4, LocalWorldSize: 2, MasterAddr: "127.0.0.1", MasterPort: 1}, "", "gotpu_mpi"},
		{"engine-not-built", Env{WorldSize: 1, LocalWorldSize: 1}, "nccl", `engine "nccl" is not built`},
		{"unknown-engine", Env{WorldSize: 1, LocalWorldSize: 1}, "tcp", "unknown engine"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := tc.env
			_, err := Init(context.Background(), Options{Env: &e, Backend: tc.backend})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestSingleProcessWorld(t *testing.T) {
	e := Env{WorldSize: 1, LocalWorldSize: 1, MasterAddr: "127.0.0.1", MasterPort: 1, Launcher: "single"}
	g, err := Init(context.Background(), Options{Env: &e})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	x := tensor.FromSlice(cpu, []float32{1, 2, 3})
	if err := g.AllReduce(context.Background(), x, Avg); err != nil {
		t.Fatal(err)
	}
	if err := same("all_reduce", x.Float64s(), []float64{1, 2, 3}, 0); err != nil {
		t.Fatal(err)
	}
}
