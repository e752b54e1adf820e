//go:build gotpu_mpi

package dist

/*
#cgo pkg-config: ompi-c
#cgo CFLAGS: -O3
#include <mpi.h>
#include <signal.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

// MPI_Init_thread, keeping the Go runtime's signal handlers: Open MPI can
// install its own (opal_signal: SIGSEGV, SIGBUS, ... for backtraces),
// which would break Go's nil-dereference panics. Open MPI 4.1 leaves
// signals that already have a handler alone; the restore guards against
// versions and settings that do not.
static int gotpu_mpi_init(int *rank, int *size, int *provided) {
	static struct sigaction old[65];
	for (int s = 1; s < 65; s++) sigaction(s, NULL, &old[s]);
	int flag = 0, rc = MPI_SUCCESS;
	MPI_Initialized(&flag);
	if (!flag) rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, provided);
	else MPI_Query_thread(provided);
	for (int s = 1; s < 65; s++) {
		if (s == SIGKILL || s == SIGSTOP) continue;
		struct sigaction cur;
		if (sigaction(s, NULL, &cur) == 0 && cur.sa_sigaction != old[s].sa_sigaction) sigaction(s, &old[s], NULL);
	}
	if (rc != MPI_SUCCESS) return rc;
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	MPI_Comm_rank(MPI_COMM_WORLD, rank);
	return MPI_Comm_size(MPI_COMM_WORLD, size);
}

static int gotpu_mpi_finalize(void) {
	int flag = 0;
	MPI_Finalized(&flag);
	return flag ? MPI_SUCCESS : MPI_Finalize();
}

static MPI_Comm gotpu_world(void) { return MPI_COMM_WORLD; }
static int gotpu_is_null(MPI_Comm c) { return c == MPI_COMM_NULL; }

static int gotpu_dup(MPI_Comm c, MPI_Comm *out) {
	int rc = MPI_Comm_dup(c, out);
	if (rc == MPI_SUCCESS) MPI_Comm_set_errhandler(*out, MPI_ERRORS_RETURN);
	return rc;
}

static int gotpu_split(MPI_Comm c, int color, int key, MPI_Comm *out) {
	int rc = MPI_Comm_split(c, color < 0 ? MPI_UNDEFINED : color, key, out);
	if (rc == MPI_SUCCESS && *out != MPI_COMM_NULL) MPI_Comm_set_errhandler(*out, MPI_ERRORS_RETURN);
	return rc;
}

static int gotpu_free(MPI_Comm c) { return MPI_Comm_free(&c); }

static void gotpu_errstr(int rc, char *buf, int cap) {
	int n = 0;
	if (MPI_Error_string(rc, buf, &n) != MPI_SUCCESS || n >= cap) n = 0;
	buf[n] = 0;
}

static double now_s(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// gotpu_poll tests the requests until all are complete (1) or spin
// seconds pass (0); a negative value is an MPI error code, negated. A
// completed request becomes MPI_REQUEST_NULL. The clock is read every 32
// rounds of tests only, from the 32nd: a small collective completes in a
// few rounds, and reading the clock costs as much as a test here.
static int gotpu_poll(MPI_Request *r, int n, double spin) {
	double end = 0;
	for (unsigned round = 0;; round++) {
		int left = 0;
		for (int i = 0; i < n; i++) {
			if (r[i] == MPI_REQUEST_NULL) continue;
			int flag = 0;
			int rc = MPI_Test(&r[i], &flag, MPI_STATUS_IGNORE);
			if (rc != MPI_SUCCESS) return -rc;
			if (!flag) left++;
		}
		if (!left) return 1;
		if (round % 32 == 31) {
			double now = now_s();
			if (end == 0) end = now + spin;
			else if (now >= end) return 0;
		}
	}
}

static int gotpu_req_done(MPI_Request r) { return r == MPI_REQUEST_NULL; }

// Element types, by code: see mpiType in Go.
static MPI_Datatype dt_of(int code) {
	switch (code) {
	case 1: return MPI_FLOAT;
	case 2: return MPI_DOUBLE;
	case 3: return MPI_INT64_T;
	case 4: return MPI_INT32_T;
	case 5: return MPI_INT16_T;
	case 6: return MPI_INT8_T;
	case 7: return MPI_UINT8_T;
	case 8: return MPI_UINT64_T;
	}
	return MPI_BYTE;
}

static MPI_Op op_of(int code) {
	switch (code) {
	case 2: return MPI_MAX;
	case 3: return MPI_MIN;
	case 4: return MPI_PROD;
	}
	return MPI_SUM;
}

// The small all-reduce (see allReduceSmall): one element of a contiguous
// type of 16+n bytes, the descriptor hash pair (h, ^h) and then n bytes of
// payload, reduced by one user-defined op: MAX on the pair, the
// collective's op on the payload. The types are made once per (element
// type, op, n) and kept; the op finds its type's entry by handle.
typedef struct { int dt, op, n; MPI_Datatype t; } small_type;
enum { SMALL_TYPES = 256 };
static small_type small_types[SMALL_TYPES];
static int n_small_types, small_last;
static MPI_Op small_op;
static int small_op_made;

#define SMALL_RED(T, UT) do { \
	const T *a = (const T *)in; T *b = (T *)io; int k = n / (int)sizeof(T); \
	switch (op) { \
	case 2: for (int i = 0; i < k; i++) if (a[i] > b[i]) b[i] = a[i]; break; \
	case 3: for (int i = 0; i < k; i++) if (a[i] < b[i]) b[i] = a[i]; break; \
	case 4: for (int i = 0; i < k; i++) b[i] = (T)((UT)a[i] * (UT)b[i]); break; \
	default: for (int i = 0; i < k; i++) b[i] = (T)((UT)a[i] + (UT)b[i]); break; \
	} } while (0)

static void small_payload(int dt, int op, const void *in, void *io, int n) {
	switch (dt) {
	case 1: SMALL_RED(float, float); break;
	case 2: SMALL_RED(double, double); break;
	case 3: SMALL_RED(int64_t, uint64_t); break;
	case 4: SMALL_RED(int32_t, uint32_t); break;
	case 5: SMALL_RED(int16_t, uint16_t); break;
	case 6: SMALL_RED(int8_t, uint8_t); break;
	case 7: SMALL_RED(uint8_t, uint8_t); break;
	case 8: SMALL_RED(uint64_t, uint64_t); break;
	}
}

static small_type *small_find(MPI_Datatype t) {
	if (small_last < n_small_types && small_types[small_last].t == t) return &small_types[small_last];
	for (int i = 0; i < n_small_types; i++)
		if (small_types[i].t == t) return &small_types[i];
	return NULL;
}

static void small_reduce(void *in, void *io, int *len, MPI_Datatype *dt) {
	small_type *st = small_find(*dt);
	if (st == NULL) return;
	size_t ext = 16 + (size_t)st->n;
	for (int e = 0; e < *len; e++) {
		const uint64_t *hi = (const uint64_t *)((const char *)in + e * ext);
		uint64_t *ho = (uint64_t *)((char *)io + e * ext);
		if (hi[0] > ho[0]) ho[0] = hi[0];
		if (hi[1] > ho[1]) ho[1] = hi[1];
		small_payload(st->dt, st->op, hi + 2, ho + 2, st->n);
	}
}

// small_type_of returns 0 and the type of (dt, op, n), 1 when the table
// is full, or an MPI error code.
static int small_type_of(int dt, int op, int n, MPI_Datatype *out) {
	if (small_last < n_small_types) {
		small_type *s = &small_types[small_last];
		if (s->dt == dt && s->op == op && s->n == n) { *out = s->t; return 0; }
	}
	for (int i = 0; i < n_small_types; i++) {
		small_type *s = &small_types[i];
		if (s->dt == dt && s->op == op && s->n == n) { small_last = i; *out = s->t; return 0; }
	}
	if (n_small_types == SMALL_TYPES) return 1;
	if (!small_op_made) {
		int rc = MPI_Op_create(small_reduce, 1, &small_op);
		if (rc != MPI_SUCCESS) return rc;
		small_op_made = 1;
	}
	MPI_Datatype t;
	int rc = MPI_Type_contiguous(16 + n, MPI_BYTE, &t);
	if (rc != MPI_SUCCESS) return rc;
	if ((rc = MPI_Type_commit(&t)) != MPI_SUCCESS) return rc;
	small_types[n_small_types] = (small_type){dt, op, n, t};
	small_last = n_small_types++;
	*out = t;
	return 0;
}

// gotpu_small_allreduce posts the small all-reduce of buf (16+n bytes)
// and tests it for up to spin seconds, in one call: 1 done, 0 pending, 2
// no type (the table is full: nothing was posted), -rc an MPI error;
// *posted says whether the request was posted.
static int gotpu_small_allreduce(void *buf, int n, int dt, int op, MPI_Comm c, MPI_Request *r, int *posted, double spin) {
	*posted = 0;
	MPI_Datatype t;
	int rc = small_type_of(dt, op, n, &t);
	if (rc == 1) return 2;
	if (rc != MPI_SUCCESS) return -rc;
	rc = MPI_Iallreduce(MPI_IN_PLACE, buf, 1, t, small_op, c, r);
	if (rc != MPI_SUCCESS) return -rc;
	*posted = 1;
	return gotpu_poll(r, 1, spin);
}

// xstate is xchg's state in C memory (Go passes no pointers of its own,
// which cgo would check on every call): the requests and how many were
// posted.
typedef struct { int posted; MPI_Request reqs[]; } xstate;

static xstate *gotpu_xstate(int n) {
	return calloc(1, sizeof(xstate) + 2 * (size_t)n * sizeof(MPI_Request));
}
static MPI_Request *gotpu_xreqs(xstate *x) { return x->reqs; }

// gotpu_xchg_reduce checks every slot's hash pair against this rank's
// (slot me) and reduces the payloads in rank order into slot n: 0, or 1
// when a pair differs.
static int gotpu_xchg_reduce(char *buf, int sz, int n, int me, int dt, int op) {
	const uint64_t *mine = (const uint64_t *)(buf + (size_t)me * sz);
	for (int r = 0; r < n; r++) {
		const uint64_t *h = (const uint64_t *)(buf + (size_t)r * sz);
		if (h[0] != mine[0] || h[1] != mine[1]) return 1;
	}
	char *out = buf + (size_t)n * sz + 16;
	memcpy(out, buf + 16, sz - 16);
	for (int r = 1; r < n; r++) small_payload(dt, op, buf + (size_t)r * sz + 16, out, sz - 16);
	return 0;
}

// gotpu_xchg posts the exchange of a small all-reduce among n ranks
// (xchg below): buf holds one slot of sz bytes per rank and one for the
// result; slot me, this rank's message, goes to every other rank, and
// slot r receives rank r's. Then it tests the requests for up to spin
// seconds and reduces: 1 done, 3 done but a hash pair differs, 0 pending,
// -rc an MPI error (x->posted says how many requests were posted).
static int gotpu_xchg(char *buf, int sz, int n, int me, int tag, MPI_Comm c, xstate *x, int dt, int op, double spin) {
	int k = 0;
	x->posted = 0;
	for (int r = 0; r < n; r++) {
		if (r == me) continue;
		int rc = MPI_Irecv(buf + (size_t)r * sz, sz, MPI_BYTE, r, tag, c, &x->reqs[k]);
		if (rc != MPI_SUCCESS) return -rc;
		x->posted = ++k;
	}
	for (int r = 0; r < n; r++) {
		if (r == me) continue;
		int rc = MPI_Isend(buf + (size_t)me * sz, sz, MPI_BYTE, r, tag, c, &x->reqs[k]);
		if (rc != MPI_SUCCESS) return -rc;
		x->posted = ++k;
	}
	int st = gotpu_poll(x->reqs, k, spin);
	if (st != 1) return st;
	return gotpu_xchg_reduce(buf, sz, n, me, dt, op) ? 3 : 1;
}

static int gotpu_iallreduce(void *buf, int n, int dt, int op, MPI_Comm c, MPI_Request *r) {
	return MPI_Iallreduce(MPI_IN_PLACE, buf, n, dt_of(dt), op_of(op), c, r);
}
static int gotpu_ireduce(void *buf, int n, int dt, int op, int root, int me, MPI_Comm c, MPI_Request *r) {
	if (me == root) return MPI_Ireduce(MPI_IN_PLACE, buf, n, dt_of(dt), op_of(op), root, c, r);
	return MPI_Ireduce(buf, NULL, n, dt_of(dt), op_of(op), root, c, r);
}
static int gotpu_ibcast(void *buf, int n, int root, MPI_Comm c, MPI_Request *r) {
	return MPI_Ibcast(buf, n, MPI_BYTE, root, c, r);
}
static int gotpu_ibarrier(MPI_Comm c, MPI_Request *r) { return MPI_Ibarrier(c, r); }
static int gotpu_iallgather(void *in, int n, void *out, MPI_Comm c, MPI_Request *r) {
	return MPI_Iallgather(in, n, MPI_BYTE, out, n, MPI_BYTE, c, r);
}
static int gotpu_igather(void *in, int n, void *out, int root, MPI_Comm c, MPI_Request *r) {
	return MPI_Igather(in, n, MPI_BYTE, out, n, MPI_BYTE, root, c, r);
}
static int gotpu_iscatter(void *in, int n, void *out, int root, MPI_Comm c, MPI_Request *r) {
	return MPI_Iscatter(in, n, MPI_BYTE, out, n, MPI_BYTE, root, c, r);
}
static int gotpu_ireduce_scatter(void *in, void *out, int n, int dt, int op, MPI_Comm c, MPI_Request *r) {
	return MPI_Ireduce_scatter_block(in, out, n, dt_of(dt), op_of(op), c, r);
}
static int gotpu_ialltoall(void *in, int n, void *out, MPI_Comm c, MPI_Request *r) {
	return MPI_Ialltoall(in, n, MPI_BYTE, out, n, MPI_BYTE, c, r);
}
static int gotpu_isend(void *buf, int n, int dst, int tag, MPI_Comm c, MPI_Request *r) {
	return MPI_Isend(buf, n, MPI_BYTE, dst, tag, c, r);
}
static int gotpu_irecv(void *buf, int n, int src, int tag, MPI_Comm c, MPI_Request *r) {
	return MPI_Irecv(buf, n, MPI_BYTE, src, tag, c, r);
}
*/
import "C"

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gotpu/gotpu/dtype"
)

// mpiBuilt reports whether this build has the mpi engine (build tag
// gotpu_mpi).
const mpiBuilt = true

// mpiMu serializes MPI calls: MPI runs at MPI_THREAD_SERIALIZED while
// goroutines (collectives, send/recv queues) call it from any thread.
var mpiMu sync.Mutex

// mpiProc is the process's MPI state: MPI can be initialized once.
var mpiProc struct {
	sync.Mutex
	inited, finalized bool
	rank, size        int
}

func mpiErr(rc C.int) string {
	var buf [C.MPI_MAX_ERROR_STRING + 1]C.char
	C.gotpu_errstr(rc, &buf[0], C.int(len(buf)))
	return fmt.Sprintf("MPI error %d: %s", int(rc), C.GoString(&buf[0]))
}

// mpiWorld is the mpi engine's state shared by the groups of one Init:
// the side channel (a second connection to the rendezvous store) that
// carries heartbeats, descriptors of mismatched calls and abort notes, and
// where each rank runs.
type mpiWorld struct {
	side   Store
	pre    string   // key prefix of this run
	hosts  []string // by global rank
	pids   []int
	pidOK  []bool // the rank's pid is visible from here: liveness by pid
	hbMu   sync.Mutex
	hbSeen map[int]hbObs // last heartbeat value seen per rank, and when
	stop   chan struct{}
	done   chan struct{}
	failed atomic.Bool // a group failed: skip MPI_Finalize, which could block
}

// mpiLeaked keeps, for the life of the process, the buffers, requests and
// pins of MPI calls that failed while posted: MPI may still write into
// them (and a collected Pinner that still pins is a fatal error).
var mpiLeaked struct {
	sync.Mutex
	v []any
}

func leak(v any) {
	mpiLeaked.Lock()
	mpiLeaked.v = append(mpiLeaked.v, v)
	mpiLeaked.Unlock()
}

type hbObs struct {
	val  string
	when time.Time
}

// mpiHeartbeat is how often each rank stamps its heartbeat into the store;
// mpiStaleHeartbeat is how long one may stay unchanged before the rank
// counts as dead (where its pid cannot be watched).
const (
	mpiHeartbeat      = 500 * time.Millisecond
	mpiStaleHeartbeat = 5 * time.Second
)

func initMPI(ctx context.Context, opts Options, env Env) (*Group, error) {
	mpiProc.Lock()
	if mpiProc.finalized {
		mpiProc.Unlock()
		return nil, errors.New("dist: mpi: MPI was finalized by an earlier Close; MPI can be initialized only once per process")
	}
	if !mpiProc.inited {
		// Open MPI's nonblocking all-reduce picks a binomial tree (reduce,
		// then broadcast) below 4 ranks, whatever the size; its ring was
		// 1.5 to 2x as fast from 64 KB to 256 MB on 2 ranks (gotpu bench
		// allreduce --engine mpi). An explicit setting wins.
		const algVar = "OMPI_MCA_coll_libnbc_iallreduce_algorithm"
		if _, set := os.LookupEnv(algVar); !set && env.WorldSize < 4 {
			os.Setenv(algVar, "1")
		}
		// The small all-reduce's messages (16 bytes more than the
		// payload) go eagerly through shared memory: above the vader
		// BTL's default 4 KB eager limit each takes a rendezvous, which
		// doubled the time of a 4 KB all-reduce (gotpu bench allreduce
		// --engine mpi: 9-16 µs against 4-7 µs) and slowed 16-32 KB.
		const eagerVar = "OMPI_MCA_btl_vader_eager_limit"
		if _, set := os.LookupEnv(eagerVar); !set && mpiSmallBytes+16 > 4096 {
			os.Setenv(eagerVar, strconv.Itoa(mpiSmallBytes+64))
		}
		var rank, size, provided C.int
		mpiMu.Lock()
		rc := C.gotpu_mpi_init(&rank, &size, &provided)
		mpiMu.Unlock()
		if rc != 0 {
			mpiProc.Unlock()
			return nil, fmt.Errorf("dist: mpi: MPI_Init_thread: %s", mpiErr(rc))
		}
		if provided < C.MPI_THREAD_SERIALIZED {
			mpiProc.Unlock()
			return nil, fmt.Errorf("dist: mpi: the MPI library provides thread level %d, below MPI_THREAD_SERIALIZED", int(provided))
		}
		mpiProc.inited, mpiProc.rank, mpiProc.size = true, int(rank), int(size)
	}
	rank, size := mpiProc.rank, mpiProc.size
	mpiProc.Unlock()
	switch {
	case env.Launcher == "single" && env.WorldSize == 1:
		env.Rank, env.WorldSize, env.Launcher = rank, size, "openmpi"
	case env.Rank != rank || env.WorldSize != size:
		return nil, fmt.Errorf("dist: mpi: the environment (%s) says rank %d of %d but MPI says rank %d of %d", env.Launcher, env.Rank, env.WorldSize, rank, size)
	}
	w := &world{env: env, opts: opts}
	mw := &mpiWorld{pre: "mpi/" + env.RunID + "/", hbSeen: map[int]hbObs{}, stop: make(chan struct{}), done: make(chan struct{})}
	w.mpi = mw
	if err := w.mpiStore(ctx); err != nil {
		w.closeStore()
		return nil, err
	}
	fail := func(err error) (*Group, error) {
		if mw.side != nil {
			mw.side.Close()
		}
		w.closeStore()
		return nil, err
	}
	side, err := DialStore(ctx, w.store.(*TCPStore).addr, opts.InitTimeout)
	if err != nil {
		return fail(err)
	}
	mw.side = side
	host, _ := os.Hostname()
	me := strconv.Itoa(env.Rank)
	if err := w.store.Set(ctx, mw.pre+"proc/"+me, []byte(fmt.Sprintf("%d %s", os.Getpid(), host))); err != nil {
		return fail(err)
	}
	keys := make([]string, size)
	for r := range keys {
		keys[r] = mw.pre + "proc/" + strconv.Itoa(r)
	}
	if err := w.store.Wait(ctx, keys, opts.InitTimeout); err != nil {
		return fail(fmt.Errorf("dist: mpi rendezvous of %d ranks: %s", size, missingRanks(err, mw.pre+"proc/")))
	}
	mw.hosts, mw.pids, mw.pidOK = make([]string, size), make([]int, size), make([]bool, size)
	for r := range keys {
		v, err := w.store.Get(ctx, keys[r], opts.InitTimeout)
		if err != nil {
			return fail(err)
		}
		pid, h, _ := strings.Cut(string(v), " ")
		mw.pids[r], _ = strconv.Atoi(pid)
		mw.hosts[r] = h
		mw.pidOK[r] = h == host && mw.pids[r] > 0 && pidAlive(mw.pids[r])
	}
	go mw.heartbeat(env.Rank)
	all := make([]int, size)
	for i := range all {
		all[i] = i
	}
	g, err := w.newMPIGroup(ctx, nil, "world", "0", all)
	if err != nil {
		close(mw.stop)
		<-mw.done
		return fail(err)
	}
	return g, nil
}

// mpiStore connects to the rendezvous store: the launcher's when it serves
// one, else rank 0 serves it on a free port of every interface and
// broadcasts its addresses through MPI, so that mpirun needs no
// MASTER_ADDR/MASTER_PORT.
func (w *world) mpiStore(ctx context.Context) error {
	env, opts := w.env, w.opts
	if env.StoreServed {
		addr := env.StoreAddr
		if addr == "" {
			addr = netJoin(env.MasterAddr, env.MasterPort)
		}
		st, err := DialStore(ctx, addr, opts.InitTimeout)
		if err != nil {
			return err
		}
		w.store = st
		return nil
	}
	buf := make([]byte, 4096)
	if env.Rank == 0 {
		srv, err := ListenStore(ctx, ":0")
		if err != nil {
			return fmt.Errorf("dist: rank 0 serves the store: %w", err)
		}
		w.server = srv
		_, port, _ := net.SplitHostPort(srv.Addr())
		var cands []string
		if a := os.Getenv("MASTER_ADDR"); a != "" {
			cands = append(cands, a)
		}
		addrs, _ := net.InterfaceAddrs()
		for _, a := range addrs {
			if ip, ok := a.(*net.IPNet); ok && ip.IP.To4() != nil && !ip.IP.IsLoopback() {
				cands = append(cands, ip.IP.String())
			}
		}
		cands = append(cands, "127.0.0.1")
		for i := range cands {
			cands[i] = netJoin(cands[i], mustAtoi(port))
		}
		copy(buf, strings.Join(cands, " "))
	}
	if w.env.WorldSize > 1 {
		pin := new(runtime.Pinner)
		pin.Pin(&buf[0])
		var req C.MPI_Request
		mpiMu.Lock()
		rc := C.gotpu_ibcast(unsafe.Pointer(&buf[0]), C.int(len(buf)), 0, C.gotpu_world(), &req)
		mpiMu.Unlock()
		if rc != 0 {
			return fmt.Errorf("dist: mpi: broadcasting the store's address: %s", mpiErr(rc))
		}
		deadline := time.Now().Add(opts.InitTimeout)
		for {
			mpiMu.Lock()
			st := C.gotpu_poll(&req, 1, 1e-3)
			mpiMu.Unlock()
			if st == 1 {
				pin.Unpin()
				break
			}
			if st < 0 {
				leak([]any{pin, buf, &req})
				return fmt.Errorf("dist: mpi: broadcasting the store's address: %s", mpiErr(-st))
			}
			if ctx.Err() != nil || time.Now().After(deadline) {
				leak([]any{pin, buf, &req}) // the request stays posted
				return fmt.Errorf("dist: mpi: rank 0 did not send the store's address within %v (it did not reach Init)", opts.InitTimeout)
			}
			time.Sleep(time.Millisecond)
		}
	}
	cands := strings.Fields(string(buf[:max(0, slices.Index(buf, 0))]))
	if w.server != nil {
		cands = []string{w.server.Addr()}
	}
	deadline := time.Now().Add(opts.InitTimeout)
	var last error
	for time.Now().Before(deadline) {
		for _, a := range cands {
			st, err := DialStore(ctx, a, 2*time.Second)
			if err == nil {
				w.store = st
				return nil
			}
			last = err
			if ctx.Err() != nil {
				return err
			}
		}
	}
	return fmt.Errorf("dist: mpi: no address of rank 0's store (%s) answered within %v: %w", strings.Join(cands, ", "), opts.InitTimeout, last)
}

func mustAtoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

func (mw *mpiWorld) heartbeat(rank int) {
	defer close(mw.done)
	t := time.NewTicker(mpiHeartbeat)
	defer t.Stop()
	key := mw.pre + "hb/" + strconv.Itoa(rank)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*mpiHeartbeat)
		mw.side.Set(ctx, key, []byte(strconv.FormatInt(time.Now().UnixNano(), 10)))
		cancel()
		select {
		case <-mw.stop:
			return
		case <-t.C:
		}
	}
}

// newMPIGroup splits parent's communicator (MPI_COMM_WORLD for the world):
// after a store rendezvous of parent's ranks, which names ranks that never
// arrive, every rank of parent calls MPI_Comm_split; members get a group
// ordered as ranks, non-members nil.
func (w *world) newMPIGroup(ctx context.Context, parent *Group, name, id string, ranks []int) (*Group, error) {
	mw := w.mpi
	me := slices.Index(ranks, w.env.Rank)
	var comm C.MPI_Comm
	if parent == nil {
		mpiMu.Lock()
		rc := C.gotpu_dup(C.gotpu_world(), &comm)
		mpiMu.Unlock()
		if rc != 0 {
			return nil, fmt.Errorf("dist: mpi: MPI_Comm_dup: %s", mpiErr(rc))
		}
	} else {
		pe := parent.eng.(*mpiEngine)
		if f := parent.failure(); f != nil {
			return nil, fmt.Errorf("dist: new group of group %s: %w: %v", parent.name, ErrAborted, f)
		}
		pe.comms++
		pre := fmt.Sprintf("%scomm/%s/%d/", mw.pre, parent.id, pe.comms)
		if err := w.store.Set(ctx, pre+strconv.Itoa(w.env.Rank), nil); err != nil {
			return nil, err
		}
		keys := make([]string, len(parent.ranks))
		for i, r := range parent.ranks {
			keys[i] = pre + strconv.Itoa(r)
		}
		if err := w.store.Wait(ctx, keys, parent.timeout); err != nil {
			return nil, fmt.Errorf("dist: new group of group %s: %s", parent.name, missingRanks(err, pre))
		}
		color := -1
		if me >= 0 {
			color = 0
			if i := strings.LastIndexByte(id, '.'); i >= 0 {
				color, _ = strconv.Atoi(id[i+1:])
			}
		}
		mpiMu.Lock()
		rc := C.gotpu_split(pe.comm, C.int(color), C.int(max(me, 0)), &comm)
		mpiMu.Unlock()
		if rc != 0 {
			return nil, fmt.Errorf("dist: mpi: MPI_Comm_split of group %s: %s", parent.name, mpiErr(rc))
		}
	}
	if me < 0 {
		return nil, nil
	}
	n := len(ranks)
	g := &Group{name: name, id: id, rank: me, ranks: ranks, global: w.env.Rank, timeout: w.opts.Timeout,
		store: w.store, world: w, p2pSent: make([]uint64, n), p2pRecv: make([]uint64, n),
		queue: make(chan *Work, 64), stop: make(chan struct{})}
	g.eng = &mpiEngine{g: g, mw: mw, comm: comm}
	g.wg.Add(1)
	go g.run()
	if id != "0" {
		w.mu.Lock()
		w.children = append(w.children, g)
		w.mu.Unlock()
	}
	return g, nil
}

// mpiEngine runs a group's collectives as nonblocking MPI calls on its
// communicator, polled under the group's timeout: while a call waits, the
// engine watches the peers' pids (ranks on this host) and heartbeats in
// the store (elsewhere), and the abort notes of peers that failed. With
// each collective it all-reduces a hash of its descriptor (16 bytes), so
// that ranks that call different collectives both fail (see run); an
// all-reduce up to GOTPU_MPI_SMALL_BYTES carries the hash in its own
// message instead (xchg, allReduceSmall).
type mpiEngine struct {
	g     *Group
	mw    *mpiWorld
	comm  C.MPI_Comm
	comms int // subgroups made from this one (rendezvous keys)
	// small, smallCap and smallReq are allReduceSmall's message buffer
	// and request, in C memory (reused; replaced after a failed call).
	small    unsafe.Pointer
	smallCap int
	smallReq *C.MPI_Request
	// xbuf, xcap and xst are xchg's: N message slots and the result's,
	// and the requests.
	xbuf unsafe.Pointer
	xcap int
	xst  *C.xstate
	// hash is descHash(hashOf), the last descriptor xchg hashed.
	hashOf string
	hash   uint64
}

func (e *mpiEngine) begin(*call) {}

func (e *mpiEngine) abort(err error) {
	e.mw.failed.Store(true)
	// Synchronously: a rank that exits right after its error must leave
	// the note for the peers, which would otherwise think it died.
	e.note("abort", err.Error())
}

// note records in the store that this rank aborted or closed the group.
func (e *mpiEngine) note(kind, msg string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	e.mw.side.Set(ctx, fmt.Sprintf("%s%s/%s/%d", e.mw.pre, kind, e.g.id, e.g.global), []byte(msg))
}

// notes returns the abort and close notes of group ranks rs ("" if none),
// and an error when the store cannot be reached.
func (e *mpiEngine) notes(rs []int) (abort, closed []string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	abort, closed = make([]string, len(rs)), make([]string, len(rs))
	for i, r := range rs {
		for _, k := range []struct {
			kind string
			out  *string
		}{{"abort", &abort[i]}, {"closed", &closed[i]}} {
			v, err := e.mw.side.Get(ctx, fmt.Sprintf("%s%s/%s/%d", e.mw.pre, k.kind, e.g.id, e.g.ranks[r]), time.Millisecond)
			switch {
			case err == nil:
				*k.out = string(v) + " " // never empty
			case !errors.Is(err, ErrStoreTimeout):
				return nil, nil, err
			}
		}
	}
	return abort, closed, nil
}

func (e *mpiEngine) close() {
	g := e.g
	e.note("closed", "")
	if g.failure() == nil {
		mpiMu.Lock()
		C.gotpu_free(e.comm)
		mpiMu.Unlock()
	}
	if g.id != "0" {
		return
	}
	if g.world.server != nil {
		e.lingerStore()
	}
	close(e.mw.stop)
	<-e.mw.done
	e.mw.side.Close()
	if e.mw.failed.Load() {
		return // a peer may be gone: MPI_Finalize could wait for it forever
	}
	done := make(chan struct{})
	go func() {
		mpiMu.Lock()
		C.gotpu_mpi_finalize()
		mpiMu.Unlock()
		close(done)
	}()
	mpiProc.Lock()
	mpiProc.finalized = true
	mpiProc.Unlock()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	}
}

// lingerStore keeps rank 0's store up until every other rank has left a
// note in it (closed or aborted) or exited, for at most 5s: a rank that
// waits in a collective reads the notes there to tell a peer that failed
// or closed from one that died.
func (e *mpiEngine) lingerStore() {
	g, mw := e.g, e.mw
	deadline := time.Now().Add(5 * time.Second)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	for r := range g.ranks {
		gr := g.ranks[r]
		for r != g.rank && time.Now().Before(deadline) {
			if mw.pidOK[gr] && !pidAlive(mw.pids[gr]) {
				break
			}
			found := false
			for _, kind := range []string{"abort", "closed"} {
				if _, err := g.store.Get(ctx, fmt.Sprintf("%s%s/%s/%d", mw.pre, kind, g.id, gr), time.Millisecond); err == nil {
					found = true
				}
			}
			if found {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// mpiType maps a dtype to dt_of's code (0: none, reduce in Go).
func mpiType(dt dtype.DType) C.int {
	switch dt {
	case dtype.F32:
		return 1
	case dtype.F64:
		return 2
	case dtype.I64:
		return 3
	case dtype.I32:
		return 4
	case dtype.I16:
		return 5
	case dtype.I8:
		return 6
	case dtype.U8, dtype.Bool:
		return 7
	}
	return 0
}

func mpiOp(op ReduceOp) C.int {
	switch op {
	case Max:
		return 2
	case Min:
		return 3
	case Prod:
		return 4
	}
	return 1 // sum, avg
}

func ptr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}

func count(c *call, n int) (C.int, error) {
	if n > math.MaxInt32 {
		return 0, fmt.Errorf("dist: mpi: %s moves %d elements in one MPI call, above MPI's int count", c.desc, n)
	}
	return C.int(n), nil
}

// contiguous returns the one buffer parts lie in, rank after rank, or nil.
func contiguous(parts [][]byte) []byte {
	if len(parts) == 0 {
		return nil
	}
	n := len(parts[0])
	if n == 0 {
		return parts[0][:0]
	}
	base := unsafe.Pointer(&parts[0][0])
	for i, p := range parts {
		if len(p) != n || unsafe.Pointer(&p[0]) != unsafe.Add(base, i*n) {
			return nil
		}
	}
	return unsafe.Slice((*byte)(base), n*len(parts))
}

func join(parts [][]byte) []byte {
	if b := contiguous(parts); b != nil {
		return b
	}
	return slices.Concat(parts...)
}

// run does collective c: it posts the descriptor check and then the
// collective itself (MPI allows several outstanding collectives, posted in
// the same order on every rank), waits for both, and reports a mismatch
// from the check first. Posting both at once saves a round trip per
// collective; ranks whose calls differ can then see MPI fail the data call
// (counts differ) or complete it on buffers of the same size, and either
// way get the mismatch error. bufs are the memory MPI reads or writes,
// pinned while it runs.
func (e *mpiEngine) run(c *call, post func(r *C.MPI_Request) C.int, bufs ...[]byte) error {
	v := descHash(c.desc)
	pair := make([]byte, 16)
	binary.NativeEndian.PutUint64(pair, v)
	binary.NativeEndian.PutUint64(pair[8:], ^v)
	check := func(r *C.MPI_Request) C.int { return C.gotpu_iallreduce(ptr(pair), 2, 8, 2, e.comm, r) }
	bad := func() bool {
		return binary.NativeEndian.Uint64(pair) != v || binary.NativeEndian.Uint64(pair[8:]) != ^v
	}
	// Once the check is complete and differs, the data call of ranks
	// that called different collectives may never complete: stop there.
	early := func(reqs []C.MPI_Request) error {
		if C.gotpu_req_done(reqs[0]) != 0 && bad() {
			return e.mismatch(c)
		}
		return nil
	}
	err := e.do(c, []func(*C.MPI_Request) C.int{check, post}, early, append(bufs, pair)...)
	var me *Error
	if bad() && (err == nil || (errors.As(err, &me) && me.Kind == "aborted")) {
		// MPI may also fail the data call of calls that differ.
		return e.g.fail(e.mismatch(c))
	}
	return err
}

// do posts requests (in order) and waits for all of them.
// early, when not nil, may end the wait with an error while some
// requests are still pending.
func (e *mpiEngine) do(c *call, posts []func(r *C.MPI_Request) C.int, early func([]C.MPI_Request) error, bufs ...[]byte) error {
	pin := new(runtime.Pinner)
	for _, b := range bufs {
		if len(b) > 0 {
			pin.Pin(&b[0])
		}
	}
	reqs := make([]C.MPI_Request, len(posts))
	mpiMu.Lock()
	for i, post := range posts {
		if rc := post(&reqs[i]); rc != 0 {
			mpiMu.Unlock()
			err := e.g.errorf(c, "aborted", []int{e.g.rank}, "posting the MPI call: %s", mpiErr(rc))
			if i > 0 {
				leak([]any{pin, reqs, bufs})
			} else {
				pin.Unpin()
			}
			return e.g.fail(err)
		}
	}
	mpiMu.Unlock()
	if err := e.wait(c, reqs, early, 0, false); err != nil {
		// MPI keeps the requests and may still touch the buffers.
		leak([]any{pin, reqs, bufs})
		return e.g.fail(err)
	}
	pin.Unpin()
	return nil
}

// do1 posts one request and waits for it.
func (e *mpiEngine) do1(c *call, post func(r *C.MPI_Request) C.int, bufs ...[]byte) error {
	return e.do(c, []func(*C.MPI_Request) C.int{post}, nil, bufs...)
}

// descPrefix is the store prefix of collective c's descriptors.
func (e *mpiEngine) descPrefix(c *call) string {
	return e.mw.pre + "desc/" + e.g.id + "/" + strconv.FormatUint(c.seq, 10) + "/"
}

// publishDesc records c's descriptor in the store for the peers'
// mismatch check.
func (e *mpiEngine) publishDesc(c *call) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	e.mw.side.Set(ctx, e.descPrefix(c)+strconv.Itoa(e.g.global), []byte(c.desc))
}

// probeDesc returns the mismatch error when a peer published a descriptor
// of collective c's sequence number that differs from c's: for the
// mismatch check (it saw the difference, or MPI failed its call), or as
// the collective it waits in (publishAt), without waiting for the others.
func (e *mpiEngine) probeDesc(c *call) error {
	if c.p2p {
		return nil // numbered per peer: another collective's number
	}
	g := e.g
	pre := e.descPrefix(c)
	seq := strconv.FormatUint(c.seq, 10) + " "
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for r, gr := range g.ranks {
		if r == g.rank {
			continue
		}
		d, err := e.mw.side.Get(ctx, pre+strconv.Itoa(gr), time.Millisecond)
		if err == nil && string(d) != c.desc {
			return e.mismatch(c)
		}
		at, err := e.mw.side.Get(ctx, e.mw.pre+"at/"+g.id+"/"+strconv.Itoa(gr), time.Millisecond)
		// A send or recv waiting publishes there too, numbered per peer.
		if err == nil && strings.HasPrefix(string(at), seq) && string(at[len(seq):]) != c.desc && !isP2PDesc(string(at[len(seq):])) {
			return e.mismatch(c)
		}
	}
	return nil
}

// isP2PDesc reports whether desc is a send's or recv's (coll.go's
// SendAsync, RecvAsync).
func isP2PDesc(desc string) bool {
	return strings.HasPrefix(desc, "send ") || strings.HasPrefix(desc, "recv ")
}

// mismatch exchanges the descriptors through the store to name the ranks
// whose call differs from this one.
func (e *mpiEngine) mismatch(c *call) error {
	g := e.g
	pre := e.descPrefix(c)
	ctx, cancel := context.WithDeadline(context.Background(), c.due().Add(5*time.Second))
	defer cancel()
	e.mw.side.Set(ctx, pre+strconv.Itoa(g.global), []byte(c.desc))
	var bad []int
	var theirs []string
	for r, gr := range g.ranks {
		if r == g.rank {
			continue
		}
		d, err := e.mw.side.Get(ctx, pre+strconv.Itoa(gr), 5*time.Second)
		if err != nil {
			d = []byte("an unknown collective (" + err.Error() + ")")
		}
		if string(d) != c.desc {
			bad = append(bad, r)
			theirs = append(theirs, fmt.Sprintf("rank %d called %s", gr, d))
		}
	}
	return g.errorf(c, "mismatch", bad, "rank %d (this rank) called %s but %s", g.global, c.desc, strings.Join(theirs, "; "))
}

// wait polls reqs until they complete, the deadline passes, ctx is done,
// the group closes, or a peer dies, aborts or reports a call that differs
// from this one. st0 is the result of a poll the caller already did (0
// when none), so that an MPI error it got is not lost. With settle, a
// call that MPI failed keeps looking for a dead peer or a peer's
// differing descriptor (for a while) even once no request is left: the
// small all-reduce has no separate check to tell a mismatch.
func (e *mpiEngine) wait(c *call, reqs []C.MPI_Request, early func([]C.MPI_Request) error, st0 C.int, settle bool) error {
	g := e.g
	start := time.Now()
	var nextCheck, nextStore, failUntil time.Time
	var mpiFailed C.int
	published, probed := false, false
	for first := true; ; first = false {
		st := st0
		if !first || st0 >= 0 {
			spin := 20e-6
			mpiMu.Lock()
			st = C.gotpu_poll(&reqs[0], C.int(len(reqs)), C.double(spin))
			mpiMu.Unlock()
		}
		if st == 1 && mpiFailed == 0 {
			return nil
		}
		if early != nil {
			if err := early(reqs); err != nil {
				return err
			}
		}
		if st == 1 && !settle { // the rest completed after MPI failed one call
			return g.errorf(c, "aborted", []int{g.rank}, "%s", mpiErr(mpiFailed))
		}
		if st < 0 && mpiFailed == 0 {
			// MPI gave up on a call (a peer's connection broke, or ranks
			// called different collectives): keep progressing the rest
			// (the descriptor check) and look for a dead peer for a
			// while before reporting MPI's error.
			mpiFailed = -st
			failUntil = time.Now().Add(mpiStaleHeartbeat + 2*time.Second)
			if failUntil.After(c.due()) {
				failUntil = c.due()
			}
		}
		if mpiFailed != 0 {
			// MPI also fails calls that differ between ranks (their
			// counts differ): publish this rank's descriptor and look
			// for a peer's that differs. First: a peer that saw the
			// mismatch reports it and may close the group at once, and
			// this rank must name the mismatch, not the closed group.
			if !probed && !c.p2p {
				probed = true
				e.publishDesc(c)
			}
			if err := e.probeDesc(c); err != nil {
				return err
			}
			if err := e.peers(c, true); err != nil {
				// The peer may have published its descriptor after the
				// probe above and then closed the group or exited.
				if perr := e.probeDesc(c); perr != nil {
					return perr
				}
				return err
			}
			if time.Now().After(failUntil) {
				return g.errorf(c, "aborted", []int{g.rank}, "%s", mpiErr(mpiFailed))
			}
			time.Sleep(20 * time.Millisecond)
			continue
		}
		now := time.Now()
		// No sleeping: MPI's nonblocking collectives progress only inside
		// MPI calls (a long transfer slows down as much as the poll
		// pauses), so this spins as MPI_Wait does, letting other
		// goroutines run after a while.
		if now.Sub(start) > 10*time.Millisecond {
			runtime.Gosched()
		}
		if now.Before(nextCheck) {
			continue
		}
		nextCheck = now.Add(5 * time.Millisecond)
		if g.closing.Load() {
			return g.errorf(c, "closed", []int{g.rank}, "this rank closed the group while the collective waited")
		}
		err := c.ctx.Err()
		if d, ok := c.ctx.Deadline(); ok && err == nil && !now.Before(d) {
			err = context.DeadlineExceeded
		}
		if err != nil {
			er := g.errorf(c, "canceled", e.lagging(c), "%v while waiting", err)
			er.Err = err
			return er
		}
		slow := !now.Before(nextStore) && now.Sub(start) > 200*time.Millisecond
		if slow {
			nextStore = now.Add(time.Second)
			if !published {
				published = true
				e.publishAt(c)
			}
		}
		if err := e.peers(c, slow); err != nil {
			// A peer that saw its call differ from this one published
			// its descriptor before it failed, closed the group or
			// exited: name the mismatch, not what followed it.
			if perr := e.probeDesc(c); perr != nil {
				return perr
			}
			return err
		}
		if slow {
			// A peer whose call differs from this one and failed or
			// saw the difference has published its descriptor.
			if err := e.probeDesc(c); err != nil {
				return err
			}
		}
		if now.After(c.due()) {
			lag := e.lagging(c)
			var parts []string
			for _, r := range lag {
				parts = append(parts, fmt.Sprintf("rank %d (pid %d on %s, alive, %s)", g.ranks[r], e.mw.pids[g.ranks[r]], e.mw.hosts[g.ranks[r]], e.lastCall(r)))
			}
			return g.errorf(c, "timeout", lag, "did not arrive within %v: %s", g.timeout, strings.Join(parts, "; "))
		}
	}
}

// publishAt records in the store which collective this rank waits in, for
// the timeout message of the others.
func (e *mpiEngine) publishAt(c *call) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	e.mw.side.Set(ctx, fmt.Sprintf("%sat/%s/%d", e.mw.pre, e.g.id, e.g.global), []byte(fmt.Sprintf("%d %s", c.seq, c.desc)))
}

// lastCall describes group rank r's last long wait, from the store.
func (e *mpiEngine) lastCall(r int) string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	v, err := e.mw.side.Get(ctx, fmt.Sprintf("%sat/%s/%d", e.mw.pre, e.g.id, e.g.ranks[r]), 10*time.Millisecond)
	if err != nil || len(v) == 0 {
		return "not waiting in a collective of this group"
	}
	seq, desc, _ := strings.Cut(string(v), " ")
	return "last waited in " + desc + " #" + seq
}

// lagging returns the group ranks that are not waiting in collective c,
// as far as the store tells (all peers when it cannot tell).
func (e *mpiEngine) lagging(c *call) []int {
	g := e.g
	var lag, all []int
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for r, gr := range g.ranks {
		if r == g.rank {
			continue
		}
		all = append(all, r)
		v, err := e.mw.side.Get(ctx, fmt.Sprintf("%sat/%s/%d", e.mw.pre, g.id, gr), 10*time.Millisecond)
		if err != nil {
			lag = append(lag, r)
			continue
		}
		seq, _, _ := strings.Cut(string(v), " ")
		if s, _ := strconv.ParseUint(seq, 10, 64); s < c.seq {
			lag = append(lag, r)
		}
	}
	if len(lag) == 0 {
		return all
	}
	return lag
}

// peers reports a peer of the group that died (its pid vanished, or, on
// another host, its heartbeat stopped), aborted or closed the group. The
// store is asked when a pid vanished (a rank that failed or closed and
// then exited left a note there) and when slow is set.
func (e *mpiEngine) peers(c *call, slow bool) error {
	g, mw := e.g, e.mw
	var peers []int
	gone := map[int]bool{}
	for r, gr := range g.ranks {
		if r == g.rank {
			continue
		}
		peers = append(peers, r)
		if mw.pidOK[gr] && !pidAlive(mw.pids[gr]) {
			gone[r] = true
		}
	}
	if len(gone) == 0 && !slow {
		return nil
	}
	abort, closed, err := e.notes(peers)
	if err != nil && len(gone) > 0 {
		abort, closed = make([]string, len(peers)), make([]string, len(peers))
	} else if err != nil {
		// The store itself is gone: rank 0 serves it.
		return &Error{Group: g.name, Collective: c.desc, Seq: c.seq, Kind: "dead", Ranks: []int{0},
			Detail: fmt.Sprintf("the store that rank 0 serves is unreachable (rank 0 died?): %v", err)}
	}
	var dead, aborted, closedR []int
	var msgs, amsgs []string
	for i, r := range peers {
		gr := g.ranks[r]
		switch {
		case abort[i] != "":
			aborted = append(aborted, r)
			amsgs = append(amsgs, fmt.Sprintf("rank %d failed: %s", gr, strings.TrimSpace(abort[i])))
		case closed[i] != "":
			closedR = append(closedR, r)
		case gone[r]:
			dead = append(dead, r)
			msgs = append(msgs, fmt.Sprintf("rank %d (pid %d) died", gr, mw.pids[gr]))
		case !mw.pidOK[gr]:
			v, err := mw.side.Get(context.Background(), fmt.Sprintf("%shb/%d", mw.pre, gr), time.Millisecond)
			if err != nil {
				continue
			}
			mw.hbMu.Lock()
			o, ok := mw.hbSeen[gr]
			now := time.Now()
			if !ok || o.val != string(v) {
				mw.hbSeen[gr] = hbObs{string(v), now}
			} else if now.Sub(o.when) > mpiStaleHeartbeat {
				dead = append(dead, r)
				msgs = append(msgs, fmt.Sprintf("rank %d (pid %d on %s) stopped its heartbeat %.1fs ago", gr, mw.pids[gr], mw.hosts[gr], now.Sub(o.when).Seconds()))
			}
			mw.hbMu.Unlock()
		}
	}
	switch {
	case len(dead) > 0:
		return g.errorf(c, "dead", dead, "%s", strings.Join(msgs, "; "))
	case len(aborted) > 0:
		return g.errorf(c, "aborted", aborted, "%s", strings.Join(amsgs, "; "))
	case len(closedR) > 0:
		return g.errorf(c, "closed", closedR, "the rank closed the group before this collective")
	}
	return nil
}

func (e *mpiEngine) allReduce(c *call, buf []byte, dt dtype.DType, op ReduceOp) error {
	mt := mpiType(dt)
	if mt == 0 {
		// 16-bit floats: MPI has no such type; gather and reduce in rank
		// order, in float32, as the built-in engine does.
		return e.allReduceGathered(c, buf, dt, op)
	}
	if len(buf) <= mpiSmallBytes && len(e.g.ranks) <= mpiXchgRanks {
		return e.xchg(c, buf, dt, mt, op)
	}
	if len(buf) <= mpiSmallBytes {
		if done, err := e.allReduceSmall(c, buf, dt, mt, op); done {
			return err
		}
	}
	// In chunks: Open MPI's nonblocking all-reduce allocates a scratch
	// buffer as large as the message on every call, and page faults on a
	// fresh 256 MB cost more than the transfer: in one piece the engine
	// had half of MPI_Allreduce's bandwidth at 256 MB, in 4 MB chunks
	// several times it (gotpu bench allreduce --engine mpi).
	per := mpiChunkBytes / dt.Size() * dt.Size()
	for i := 0; i == 0 || i < len(buf); i += per {
		part := buf[i:min(i+per, len(buf))]
		n := C.int(len(part) / dt.Size())
		post := func(r *C.MPI_Request) C.int {
			return C.gotpu_iallreduce(ptr(part), n, mt, mpiOp(op), e.comm, r)
		}
		var err error
		if i == 0 {
			err = e.run(c, post, part)
		} else {
			err = e.do1(c, post, part)
		}
		if err != nil {
			return err
		}
	}
	if op == Avg {
		reduceBytes(buf, [][]byte{buf}, dt, Avg, len(e.g.ranks))
	}
	return nil
}

// mpiChunkBytes is the largest piece of an all-reduce in one MPI call
// (GOTPU_MPI_CHUNK_BYTES overrides it, for measurements).
var mpiChunkBytes = func() int {
	if n, err := strconv.Atoi(os.Getenv("GOTPU_MPI_CHUNK_BYTES")); err == nil && n >= 1024 {
		return n
	}
	return 4 << 20
}()

// mpiSmallBytes is the largest all-reduce (bytes) that carries the
// descriptor check in its own message (xchg, allReduceSmall) instead of a
// separate all-reduce; GOTPU_MPI_SMALL_BYTES overrides it (0: never).
// Above 32 KB the exchange lost to Open MPI's ring on 2 ranks (gotpu
// bench allreduce --engine mpi, 2-core Zen 3): it sends and reduces whole
// messages, the ring halves.
var mpiSmallBytes = func() int {
	if n, err := strconv.Atoi(os.Getenv("GOTPU_MPI_SMALL_BYTES")); err == nil && n >= 0 {
		return n
	}
	return 32 << 10
}()

// descHash is the FNV-1a hash of a descriptor, for the mismatch check.
func descHash(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// allReduceSmall all-reduces buf with the descriptor check inside the
// same MPI call, instead of a separate all-reduce posted before it (run):
// one element of 16+len(buf) bytes, the pair (h, ^h) of the descriptor's
// hash followed by the payload, reduced by a user-defined op (MAX on the
// pair, op on the payload; see small_reduce). Every rank ends with
// (max h, max ^h): both equal this rank's (h, ^h) only when every rank's
// h is. The message is copied through C memory (no pinning), posted and
// first tested in one cgo call. Ranks whose calls differ see the pair
// differ, or MPI fail the call (the sizes differ), or wait: then the
// descriptors published in the store (wait's probe) tell. done is false
// when the small path is not available (nothing was posted).
func (e *mpiEngine) allReduceSmall(c *call, buf []byte, dt dtype.DType, mt C.int, op ReduceOp) (done bool, err error) {
	n := len(buf)
	if e.small == nil || e.smallCap < n+16 {
		if e.small != nil {
			C.free(e.small)
		}
		e.smallCap = max(n+16, 4096)
		e.small = C.malloc(C.size_t(e.smallCap))
	}
	if e.smallReq == nil {
		e.smallReq = (*C.MPI_Request)(C.malloc(C.size_t(unsafe.Sizeof(C.MPI_Request(nil)))))
	}
	msg := unsafe.Slice((*byte)(e.small), n+16)
	h := descHash(c.desc)
	binary.NativeEndian.PutUint64(msg, h)
	binary.NativeEndian.PutUint64(msg[8:], ^h)
	copy(msg[16:], buf)
	var posted C.int
	mpiMu.Lock()
	st := C.gotpu_small_allreduce(e.small, C.int(n), mt, mpiOp(op), e.comm, e.smallReq, &posted, 10e-6)
	mpiMu.Unlock()
	if posted == 0 {
		if st == 2 {
			return false, nil
		}
		return true, e.g.fail(e.g.errorf(c, "aborted", []int{e.g.rank}, "posting the MPI call: %s", mpiErr(-st)))
	}
	if st != 1 {
		reqs := unsafe.Slice(e.smallReq, 1)
		if err := e.wait(c, reqs, nil, st, true); err != nil {
			// MPI may still write into the message: keep it (leaked).
			e.small, e.smallReq, e.smallCap = nil, nil, 0
			var me *Error
			if errors.As(err, &me) && me.Kind == "aborted" && me.Ranks[0] == e.g.global {
				// MPI failed the call: calls that differ are the likely
				// cause; the peers' descriptors tell.
				if perr := e.probeDesc(c); perr != nil {
					return true, e.g.fail(perr)
				}
			}
			return true, e.g.fail(err)
		}
	}
	if binary.NativeEndian.Uint64(msg) != h || binary.NativeEndian.Uint64(msg[8:]) != ^h {
		return true, e.g.fail(e.mismatch(c))
	}
	copy(buf, msg[16:])
	if op == Avg {
		reduceBytes(buf, [][]byte{buf}, dt, Avg, len(e.g.ranks))
	}
	return true, nil
}

// mpiXchgRanks is the largest group whose small all-reduces are an
// exchange of point-to-point messages (xchg) rather than Open MPI's
// nonblocking all-reduce (allReduceSmall); GOTPU_MPI_XCHG_RANKS overrides
// it (0: never, for tests and measurements).
var mpiXchgRanks = func() int {
	if n, err := strconv.Atoi(os.Getenv("GOTPU_MPI_XCHG_RANKS")); err == nil && n >= 0 {
		return n
	}
	return 8
}()

// tagSmall tags xchg's messages (send/recv use tagHeader and tagData).
const tagSmall = 3

// xchg all-reduces buf in groups of up to mpiXchgRanks ranks: every rank
// sends its message, the descriptor's hash pair (h, ^h) then the payload,
// to every other and reduces the N messages in rank order, so every rank
// computes the same result. Point-to-point messages cost much less than
// Open MPI's nonblocking all-reduce (libnbc builds a schedule and
// allocates on every call), about what its blocking MPI_Allreduce costs
// (recursive doubling: the same exchange on 2 ranks). A peer whose call
// differs sends a different pair, a message of another size (MPI fails
// the receive when it is longer) or none: then both ranks wait, publish
// what they wait in (wait's slow path) and find the peer's descriptor
// there.
func (e *mpiEngine) xchg(c *call, buf []byte, dt dtype.DType, mt C.int, op ReduceOp) error {
	g := e.g
	N, sz := len(g.ranks), len(buf)+16
	if e.xbuf == nil || e.xcap < (N+1)*sz {
		if e.xbuf != nil {
			C.free(e.xbuf)
		}
		e.xcap = max((N+1)*sz, 8192)
		e.xbuf = C.malloc(C.size_t(e.xcap))
	}
	if e.xst == nil {
		e.xst = C.gotpu_xstate(C.int(N))
	}
	all := unsafe.Slice((*byte)(e.xbuf), (N+1)*sz)
	msg := all[g.rank*sz : (g.rank+1)*sz]
	if c.desc != e.hashOf {
		e.hashOf, e.hash = c.desc, descHash(c.desc)
	}
	h := e.hash
	binary.NativeEndian.PutUint64(msg, h)
	binary.NativeEndian.PutUint64(msg[8:], ^h)
	copy(msg[16:], buf)
	mpiMu.Lock()
	st := C.gotpu_xchg((*C.char)(e.xbuf), C.int(sz), C.int(N), C.int(g.rank), tagSmall, e.comm, e.xst, mt, mpiOp(op), 10e-6)
	mpiMu.Unlock()
	if st != 1 && st != 3 {
		var err error
		if posted := int(e.xst.posted); posted < 2*(N-1) {
			err = g.errorf(c, "aborted", []int{g.rank}, "posting the MPI call: %s", mpiErr(-st))
		} else {
			err = e.wait(c, unsafe.Slice(C.gotpu_xreqs(e.xst), posted), nil, st, true)
		}
		if err != nil {
			// MPI may still read or write the buffer: keep it (leaked).
			e.xbuf, e.xst, e.xcap = nil, nil, 0
			return g.fail(err)
		}
		st = 1
		if C.gotpu_xchg_reduce((*C.char)(e.xbuf), C.int(sz), C.int(N), C.int(g.rank), mt, mpiOp(op)) != 0 {
			st = 3
		}
	}
	if st == 3 {
		return g.fail(e.mismatch(c))
	}
	copy(buf, all[N*sz+16:])
	if op == Avg {
		reduceBytes(buf, [][]byte{buf}, dt, Avg, N)
	}
	return nil
}

func (e *mpiEngine) allReduceGathered(c *call, buf []byte, dt dtype.DType, op ReduceOp) error {
	N := len(e.g.ranks)
	all := make([]byte, N*len(buf))
	if err := e.allGather(c, buf, splitBytes(all, N)); err != nil {
		return err
	}
	reduceBytes(buf, splitBytes(all, N), dt, op, N)
	return nil
}

func (e *mpiEngine) reduce(c *call, buf []byte, dt dtype.DType, op ReduceOp, dst int) error {
	mt := mpiType(dt)
	if mt == 0 {
		if e.g.rank == dst {
			return e.allReduceGathered(c, buf, dt, op)
		}
		tmp := slices.Clone(buf)
		return e.allReduceGathered(c, tmp, dt, op)
	}
	n, err := count(c, len(buf)/dt.Size())
	if err != nil {
		return err
	}
	if err := e.run(c, func(r *C.MPI_Request) C.int {
		return C.gotpu_ireduce(ptr(buf), n, mt, mpiOp(op), C.int(dst), C.int(e.g.rank), e.comm, r)
	}, buf); err != nil {
		return err
	}
	if op == Avg && e.g.rank == dst {
		reduceBytes(buf, [][]byte{buf}, dt, Avg, len(e.g.ranks))
	}
	return nil
}

func (e *mpiEngine) broadcast(c *call, buf []byte, src int) error {
	n, err := count(c, len(buf))
	if err != nil {
		return err
	}
	return e.run(c, func(r *C.MPI_Request) C.int {
		return C.gotpu_ibcast(ptr(buf), n, C.int(src), e.comm, r)
	}, buf)
}

func (e *mpiEngine) barrier(c *call) error {
	return e.run(c, func(r *C.MPI_Request) C.int { return C.gotpu_ibarrier(e.comm, r) })
}

func (e *mpiEngine) allGather(c *call, in []byte, out [][]byte) error {
	n, err := count(c, len(in))
	if err != nil {
		return err
	}
	dst := contiguous(out)
	if dst == nil {
		dst = make([]byte, len(in)*len(out))
	}
	if err := e.run(c, func(r *C.MPI_Request) C.int {
		return C.gotpu_iallgather(ptr(in), n, ptr(dst), e.comm, r)
	}, in, dst); err != nil {
		return err
	}
	if contiguous(out) == nil {
		for i, o := range out {
			copy(o, dst[i*len(in):])
		}
	}
	return nil
}

func (e *mpiEngine) gather(c *call, in []byte, out [][]byte, root int) error {
	n, err := count(c, len(in))
	if err != nil {
		return err
	}
	var dst []byte
	if e.g.rank == root {
		if dst = contiguous(out); dst == nil {
			dst = make([]byte, len(in)*len(out))
		}
	}
	if err := e.run(c, func(r *C.MPI_Request) C.int {
		return C.gotpu_igather(ptr(in), n, ptr(dst), C.int(root), e.comm, r)
	}, in, dst); err != nil {
		return err
	}
	if e.g.rank == root && contiguous(out) == nil {
		for i, o := range out {
			copy(o, dst[i*len(in):])
		}
	}
	return nil
}

func (e *mpiEngine) scatter(c *call, in [][]byte, out []byte, root, _ int) error {
	n, err := count(c, len(out))
	if err != nil {
		return err
	}
	var src []byte
	if e.g.rank == root {
		src = join(in)
	}
	return e.run(c, func(r *C.MPI_Request) C.int {
		return C.gotpu_iscatter(ptr(src), n, ptr(out), C.int(root), e.comm, r)
	}, src, out)
}

func (e *mpiEngine) reduceScatter(c *call, in [][]byte, out []byte, dt dtype.DType, op ReduceOp) error {
	N := len(e.g.ranks)
	mt := mpiType(dt)
	if mt == 0 {
		parts := make([]byte, N*len(out))
		if err := e.allToAll(c, in, splitBytes(parts, N), dt.Size()); err != nil {
			return err
		}
		reduceBytes(out, splitBytes(parts, N), dt, op, N)
		return nil
	}
	n, err := count(c, len(out)/dt.Size())
	if err != nil {
		return err
	}
	src := join(in)
	if err := e.run(c, func(r *C.MPI_Request) C.int {
		return C.gotpu_ireduce_scatter(ptr(src), ptr(out), n, mt, mpiOp(op), e.comm, r)
	}, src, out); err != nil {
		return err
	}
	if op == Avg {
		reduceBytes(out, [][]byte{out}, dt, Avg, N)
	}
	return nil
}

func (e *mpiEngine) allToAll(c *call, in, out [][]byte, _ int) error {
	n, err := count(c, len(in[0]))
	if err != nil {
		return err
	}
	src := join(in)
	dst := contiguous(out)
	if dst == nil {
		dst = make([]byte, len(src))
	}
	if err := e.run(c, func(r *C.MPI_Request) C.int {
		return C.gotpu_ialltoall(ptr(src), n, ptr(dst), e.comm, r)
	}, src, dst); err != nil {
		return err
	}
	if contiguous(out) == nil {
		for i, o := range out {
			copy(o, dst[i*len(in[0]):])
		}
	}
	return nil
}

// Send/recv tags: a header message with the sender's descriptor, then the
// data (MPI keeps the order of messages with one source, tag and
// communicator).
const (
	tagHeader = 1
	tagData   = 2
	headerMax = 256
)

func (e *mpiEngine) send(c *call, buf []byte, dst int, desc string) error {
	hdr := make([]byte, headerMax)
	copy(hdr, desc)
	n, err := count(c, len(buf))
	if err != nil {
		return err
	}
	if err := e.do1(c, func(r *C.MPI_Request) C.int {
		return C.gotpu_isend(ptr(hdr), headerMax, C.int(dst), tagHeader, e.comm, r)
	}, hdr); err != nil {
		return err
	}
	if err := e.do1(c, func(r *C.MPI_Request) C.int {
		return C.gotpu_isend(ptr(buf), n, C.int(dst), tagData, e.comm, r)
	}, buf); err != nil {
		return err
	}
	e.g.p2pSent[dst]++
	return nil
}

func (e *mpiEngine) recv(c *call, buf []byte, src int, desc string) error {
	hdr := make([]byte, headerMax)
	n, err := count(c, len(buf))
	if err != nil {
		return err
	}
	if err := e.do1(c, func(r *C.MPI_Request) C.int {
		return C.gotpu_irecv(ptr(hdr), headerMax, C.int(src), tagHeader, e.comm, r)
	}, hdr); err != nil {
		return err
	}
	got := string(hdr[:max(0, slices.Index(hdr, 0))])
	if slices.Index(hdr, 0) < 0 {
		got = string(hdr)
	}
	if got != desc {
		g := e.g
		return g.fail(g.errorf(c, "mismatch", []int{src}, "rank %d sent %s but rank %d (this rank) receives %s", g.ranks[src], got, g.global, desc))
	}
	if err := e.do1(c, func(r *C.MPI_Request) C.int {
		return C.gotpu_irecv(ptr(buf), n, C.int(src), tagData, e.comm, r)
	}, buf); err != nil {
		return err
	}
	e.g.p2pRecv[src]++
	return nil
}
