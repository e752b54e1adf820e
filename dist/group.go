package dist

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gotpu/gotpu/dtype"
)

// DefaultTimeout is how long a collective waits for the other ranks before
// it fails (GOTPU_DIST_TIMEOUT, a Go duration, overrides it).
const DefaultTimeout = 30 * time.Minute

// Options configure Init. Zero values take the defaults.
type Options struct {
	// Backend is the engine: "shm" (built in: processes on one host) or
	// "mpi" (Open MPI, any number of hosts; needs build tag gotpu_mpi).
	// Empty: GOTPU_DIST_ENGINE, else mpi when Open MPI's mpirun launched
	// the job and the build has it, else shm.
	Backend string
	// Timeout bounds every collective (default DefaultTimeout or
	// GOTPU_DIST_TIMEOUT).
	Timeout time.Duration
	// InitTimeout bounds the rendezvous (default: Timeout, at most 5 min).
	InitTimeout time.Duration
	// Env overrides the launcher's environment (nil: EnvFromOS).
	Env *Env
	// SlotBytes and P2PBytes size the shared-memory slots (defaults
	// DefaultSlotBytes, or GOTPU_DIST_SLOT_BYTES, and DefaultP2PBytes).
	SlotBytes, P2PBytes int
}

// Error is a collective's failure: a rank that died or did not arrive in
// time, ranks that issued different collectives, or an aborted group.
type Error struct {
	Group      string // group name ("world", "group1", ...)
	Collective string // descriptor, e.g. "all_reduce(sum) float32[1024]"
	Seq        uint64 // the collective's sequence number in its group
	Kind       string // "timeout", "dead", "mismatch", "aborted", "closed", "canceled"
	Ranks      []int  // the ranks (global) the error is about
	Detail     string
	Err        error // a wrapped cause (ctx error), if any
}

func (e *Error) Error() string {
	rs := make([]string, len(e.Ranks))
	for i, r := range e.Ranks {
		rs[i] = strconv.Itoa(r)
	}
	who := "rank"
	if len(rs) > 1 {
		who = "ranks"
	}
	return fmt.Sprintf("dist: %s #%d in group %s: %s (%s %s): %s", e.Collective, e.Seq, e.Group, e.Kind, who, strings.Join(rs, ","), e.Detail)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// ErrAborted is wrapped by the errors of calls on a group that failed before.
var ErrAborted = errors.New("dist: group aborted after an earlier error")

// Group is a process group (torch.distributed's ProcessGroup): the ranks
// that run collectives together. Its collectives run in call order on one
// goroutine per group; the async variants return at once with a Work.
type Group struct {
	name    string
	id      string
	rank    int   // this process's rank in the group
	ranks   []int // global ranks, by group rank
	global  int   // this process's global rank
	timeout time.Duration
	eng     engine // the built-in engine (shmEngine) or mpi
	seg     *segment
	store   Store
	world   *world
	steps   uint64 // this rank's step counter (mirrors the segment)
	seq     uint64 // next collective's sequence number
	chunkK  uint64 // next chunk's slot parity
	p2pSent []uint64
	p2pRecv []uint64
	// pidSeen[r] is whether rank r's pid was visible from this process
	// when the group formed (not in another pid namespace): a vanished pid
	// then means a dead rank; otherwise a stale heartbeat does.
	pidSeen []bool
	failMu  sync.Mutex
	failed  error
	// hasFailed is failed != nil, read without failMu on every call.
	hasFailed atomic.Bool
	// arDesc is the last all_reduce descriptor (allReduceDesc), under
	// execMu.
	arDesc struct {
		op    ReduceOp
		dt    dtype.DType
		shape []int
		desc  string
	}
	queue chan *Work
	// execMu is held while a collective runs, on the group's goroutine
	// (async calls) or on the caller's (blocking calls, when nothing is
	// queued); queued counts the async calls submitted and not finished.
	execMu  sync.Mutex
	queued  atomic.Int64
	closing atomic.Bool // Close was called: in-flight waits give up
	p2pMu   sync.Mutex
	p2pQ    map[string]chan *Work // send/recv queues, one per peer and direction
	stop    chan struct{}
	wg      sync.WaitGroup
	closeMu sync.Once
}

// world is the state shared by the groups of one Init.
type world struct {
	env      Env
	opts     Options
	store    Store
	server   *StoreServer
	mu       sync.Mutex
	nextID   int
	children []*Group
	mpi      *mpiWorld // the mpi engine's state; nil on the built-in engine
}

// Init joins the job described by the launcher's environment (or opts.Env)
// and returns the group of all ranks (torch.distributed.init_process_group).
// Every rank must call it. On the built-in engine a world spanning hosts is
// refused: it needs every rank on one host; the mpi engine runs anywhere
// Open MPI does.
func Init(ctx context.Context, opts Options) (*Group, error) {
	if opts.Backend != "" {
		if _, err := chooseEngine(opts.Backend, nil); err != nil {
			return nil, err
		}
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
		if v := os.Getenv("GOTPU_DIST_TIMEOUT"); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return nil, fmt.Errorf("dist: GOTPU_DIST_TIMEOUT=%q is not a positive duration", v)
			}
			opts.Timeout = d
		}
	}
	if opts.InitTimeout <= 0 {
		opts.InitTimeout = min(opts.Timeout, 5*time.Minute)
	}
	if opts.SlotBytes <= 0 {
		opts.SlotBytes = DefaultSlotBytes
		if v := os.Getenv("GOTPU_DIST_SLOT_BYTES"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return nil, fmt.Errorf("dist: GOTPU_DIST_SLOT_BYTES=%q is not a positive integer", v)
			}
			opts.SlotBytes = n
		}
	}
	if opts.P2PBytes <= 0 {
		opts.P2PBytes = DefaultP2PBytes
	}
	opts.SlotBytes = roundUp(opts.SlotBytes, 4096)
	opts.P2PBytes = roundUp(max(opts.P2PBytes, 2*msgHeader), 4096)
	var env Env
	if opts.Env != nil {
		env = *opts.Env
	} else {
		var err error
		if env, err = EnvFromOS(); err != nil {
			return nil, err
		}
	}
	engName, err := chooseEngine(opts.Backend, &env)
	if err != nil {
		return nil, err
	}
	if engName == engineMPI {
		return initMPI(ctx, opts, env)
	}
	if env.MultiHost() {
		return nil, multiHostError(env.WorldSize, fmt.Sprintf("%d processes per host", env.LocalWorldSize))
	}
	w := &world{env: env, opts: opts}
	addr := netJoin(env.MasterAddr, env.MasterPort)
	if env.StoreAddr != "" {
		addr = env.StoreAddr
	} else if env.WorldSize == 1 && !env.StoreServed {
		addr = "127.0.0.1:0"
	}
	if env.Rank == 0 && !env.StoreServed {
		srv, err := ListenStore(ctx, addr)
		if err != nil {
			return nil, fmt.Errorf("dist: rank 0 serves the store: %w", err)
		}
		w.server, addr = srv, srv.Addr()
	}
	st, err := DialStore(ctx, addr, opts.InitTimeout)
	if err != nil {
		w.closeStore()
		return nil, err
	}
	w.store = st
	host, _ := os.Hostname()
	run := env.RunID
	pre := "init/" + run + "/"
	if err := st.Set(ctx, pre+"host/"+strconv.Itoa(env.Rank), []byte(host)); err != nil {
		w.closeStore()
		return nil, err
	}
	keys := make([]string, env.WorldSize)
	for r := range keys {
		keys[r] = pre + "host/" + strconv.Itoa(r)
	}
	if err := st.Wait(ctx, keys, opts.InitTimeout); err != nil {
		w.closeStore()
		return nil, fmt.Errorf("dist: rendezvous of %d ranks: %s", env.WorldSize, missingRanks(err, pre+"host/"))
	}
	for r := range keys {
		h, err := st.Get(ctx, keys[r], opts.InitTimeout)
		if err != nil {
			w.closeStore()
			return nil, err
		}
		if string(h) != host {
			w.closeStore()
			return nil, multiHostError(env.WorldSize, fmt.Sprintf("rank %d runs on %q, rank %d on %q", env.Rank, host, r, h))
		}
	}
	all := make([]int, env.WorldSize)
	for i := range all {
		all[i] = i
	}
	g, err := w.newGroup(ctx, nil, "world", "0", all)
	if err != nil {
		w.closeStore()
		return nil, err
	}
	return g, nil
}

func multiHostError(world int, why string) error {
	return fmt.Errorf("dist: the world of %d ranks spans more than one host (%s); the built-in engine runs processes on one host only — across hosts use the mpi engine (build with -tags gotpu_mpi and launch with Open MPI's mpirun, or set GOTPU_DIST_ENGINE=mpi); xla and nccl are not built yet", world, why)
}

func netJoin(host string, port int) string {
	if strings.Contains(host, ":") && !strings.HasPrefix(host, "[") {
		host = "[" + host + "]"
	}
	return host + ":" + strconv.Itoa(port)
}

// missingRanks turns a store wait error on prefix+rank keys into a
// message naming the ranks that never arrived.
func missingRanks(err error, prefix string) string {
	msg := err.Error()
	if !errors.Is(err, ErrStoreTimeout) {
		return msg
	}
	i := strings.Index(msg, "keys ")
	j := strings.Index(msg, " not set")
	if i < 0 || j < i {
		return msg
	}
	var rs []string
	for _, k := range strings.Split(msg[i+5:j], ", ") {
		rs = append(rs, strings.TrimPrefix(k, prefix))
	}
	return fmt.Sprintf("ranks %s never arrived: %s", strings.Join(rs, ","), msg)
}

func (w *world) closeStore() {
	if w.store != nil {
		w.store.Close()
	}
	if w.server != nil {
		w.server.Close()
	}
}

// newGroup makes a group of global ranks, a subgroup of parent (nil for
// the world): the shared memory of the built-in engine, a communicator
// split from parent's on mpi. All ranks of the parent call it; a
// non-member gets nil.
func (w *world) newGroup(ctx context.Context, parent *Group, name, id string, ranks []int) (*Group, error) {
	if w.mpi != nil {
		return w.newMPIGroup(ctx, parent, name, id, ranks)
	}
	me := slices.Index(ranks, w.env.Rank)
	if me < 0 {
		return nil, nil
	}
	n := len(ranks)
	pre := "group/" + w.env.RunID + "/" + id + "/"
	var seg *segment
	var err error
	if me == 0 {
		seg, err = createSegment(fmt.Sprintf("%d-%s", os.Getpid(), id), n, w.opts.SlotBytes, w.opts.P2PBytes)
		if err != nil {
			return nil, err
		}
		if err := w.store.Set(ctx, pre+"shm", []byte(seg.path)); err != nil {
			os.Remove(seg.path)
			seg.unmap()
			return nil, err
		}
	} else {
		path, err := w.store.Get(ctx, pre+"shm", w.opts.InitTimeout)
		if err != nil {
			return nil, fmt.Errorf("dist: group %s: rank %d did not create its shared memory: %w", name, ranks[0], err)
		}
		if seg, err = openSegment(string(path)); err != nil {
			return nil, err
		}
	}
	c := seg.ctl(me)
	seg.i64(c + ctlPid).Store(int64(os.Getpid()))
	seg.i64(c + ctlHeartbeat).Store(time.Now().UnixNano())
	seg.u32(c + ctlState).Store(stateAlive)
	keys := make([]string, n)
	for i, r := range ranks {
		keys[i] = pre + "mapped/" + strconv.Itoa(r)
	}
	if err := w.store.Set(ctx, keys[me], nil); err == nil {
		err = w.store.Wait(ctx, keys, w.opts.InitTimeout)
		if err != nil {
			err = fmt.Errorf("dist: group %s: %s", name, missingRanks(err, pre+"mapped/"))
		}
	}
	if me == 0 {
		os.Remove(seg.path) // every member has it mapped: nothing to clean up later
	}
	if err != nil {
		seg.unmap()
		return nil, err
	}
	pidSeen := make([]bool, n)
	for r := range pidSeen {
		pid := int(seg.i64(seg.ctl(r) + ctlPid).Load())
		pidSeen[r] = pid > 0 && pidAlive(pid)
	}
	g := &Group{name: name, id: id, rank: me, ranks: ranks, global: w.env.Rank, timeout: w.opts.Timeout, pidSeen: pidSeen,
		seg: seg, store: w.store, world: w, p2pSent: make([]uint64, n), p2pRecv: make([]uint64, n),
		queue: make(chan *Work, 64), stop: make(chan struct{})}
	g.eng = shmEngine{g}
	g.wg.Add(2)
	go g.run()
	go g.heartbeat()
	if id != "0" {
		w.mu.Lock()
		w.children = append(w.children, g)
		w.mu.Unlock()
	}
	return g, nil
}

// Rank returns this process's rank in the group.
func (g *Group) Rank() int { return g.rank }

// Size returns the number of ranks in the group.
func (g *Group) Size() int { return len(g.ranks) }

// Name returns the group's name ("world" for Init's group).
func (g *Group) Name() string { return g.name }

// GlobalRank returns the global rank of group rank r.
func (g *Group) GlobalRank(r int) int { return g.ranks[r] }

// Ranks returns the global ranks of the group's members, by group rank.
func (g *Group) Ranks() []int { return slices.Clone(g.ranks) }

// Env returns the environment Init read.
func (g *Group) Env() Env { return g.world.env }

// Timeout returns the collective timeout.
func (g *Group) Timeout() time.Duration { return g.timeout }

// SetTimeout changes the timeout of the group's later collectives.
func (g *Group) SetTimeout(d time.Duration) { g.timeout = d }

// NewGroup makes a subgroup of the given global ranks
// (torch.distributed.new_group). Every rank of g must call it with the same
// ranks, members or not; non-members get a nil group.
func (g *Group) NewGroup(ctx context.Context, ranks []int) (*Group, error) {
	rs := slices.Clone(ranks)
	sort.Ints(rs)
	rs = slices.Compact(rs)
	for _, r := range rs {
		if !slices.Contains(g.ranks, r) {
			return nil, fmt.Errorf("dist: new_group: rank %d is not in group %s (ranks %v)", r, g.name, g.ranks)
		}
	}
	if len(rs) == 0 {
		return nil, errors.New("dist: new_group: no ranks")
	}
	id := g.world.allocID(g)
	return g.world.newGroup(ctx, g, "group"+id, id, rs)
}

// Split divides g into subgroups by color (MPI_Comm_split,
// torch.distributed.split_group): ranks passing the same color form one
// group, ordered by key and then by rank. Every rank of g must call it; a
// negative color returns a nil group for that rank.
func (g *Group) Split(ctx context.Context, color, key int) (*Group, error) {
	id := g.world.allocID(g)
	pre := "split/" + g.world.env.RunID + "/" + id + "/"
	if err := g.store.Set(ctx, pre+strconv.Itoa(g.global), []byte(fmt.Sprintf("%d %d", color, key))); err != nil {
		return nil, err
	}
	keys := make([]string, len(g.ranks))
	for i, r := range g.ranks {
		keys[i] = pre + strconv.Itoa(r)
	}
	if err := g.store.Wait(ctx, keys, g.timeout); err != nil {
		return nil, fmt.Errorf("dist: split of group %s: %s", g.name, missingRanks(err, pre))
	}
	type member struct{ color, key, rank int }
	var mine []member
	for i, r := range g.ranks {
		v, err := g.store.Get(ctx, keys[i], g.timeout)
		if err != nil {
			return nil, err
		}
		var m member
		if _, err := fmt.Sscan(string(v), &m.color, &m.key); err != nil {
			return nil, fmt.Errorf("dist: split: bad entry %q of rank %d: %w", v, r, err)
		}
		m.rank = r
		if m.color == color && color >= 0 {
			mine = append(mine, m)
		}
	}
	if color < 0 {
		if g.world.mpi != nil {
			// Every rank of the parent communicator takes part in the split.
			return g.world.newGroup(ctx, g, "", "", nil)
		}
		return nil, nil
	}
	sort.SliceStable(mine, func(i, j int) bool {
		if mine[i].key != mine[j].key {
			return mine[i].key < mine[j].key
		}
		return mine[i].rank < mine[j].rank
	})
	rs := make([]int, len(mine))
	for i, m := range mine {
		rs[i] = m.rank
	}
	return g.world.newGroup(ctx, g, fmt.Sprintf("split%s.%d", id, color), id+"."+strconv.Itoa(color), rs)
}

func (w *world) allocID(_ *Group) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.nextID++
	return strconv.Itoa(w.nextID)
}

// Close leaves the group; on the world group it also closes every
// subgroup and the store. Peers still waiting on this rank get an error.
func (g *Group) Close() error {
	g.closeMu.Do(func() {
		g.p2pMu.Lock() // no send/recv queue starts after this
		g.closing.Store(true)
		g.p2pMu.Unlock()
		close(g.stop)
		g.wg.Wait()
		// A blocking collective running on its caller's goroutine gives
		// up (closing is set); wait for it before the engine closes.
		g.execMu.Lock()
		g.execMu.Unlock()
		if g.id == "0" {
			g.world.mu.Lock()
			kids := g.world.children
			g.world.children = nil
			g.world.mu.Unlock()
			for _, k := range kids {
				k.Close()
			}
		}
		g.eng.close()
		if g.id == "0" {
			g.world.closeStore()
		}
	})
	return nil
}

func (g *Group) heartbeat() {
	defer g.wg.Done()
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-g.stop:
			return
		case now := <-t.C:
			g.seg.i64(g.seg.ctl(g.rank) + ctlHeartbeat).Store(now.UnixNano())
		}
	}
}

// Work is the handle of an asynchronous collective (torch's Work).
type Work struct {
	ctx  context.Context
	fn   func(ctx context.Context) error
	done chan struct{}
	err  error
}

// Wait waits until the collective finishes and returns its error, or
// returns ctx's error first (the collective keeps running).
func (w *Work) Wait(ctx context.Context) error {
	select {
	case <-w.done:
		return w.err
	case <-ctx.Done():
		return fmt.Errorf("dist: waiting for an async collective: %w", ctx.Err())
	}
}

// Done reports whether the collective has finished.
func (w *Work) Done() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

func (g *Group) run() {
	defer g.wg.Done()
	for {
		select {
		case <-g.stop:
			// Fail what is still queued.
			for {
				select {
				case w := <-g.queue:
					w.err = fmt.Errorf("dist: group %s closed before the collective ran", g.name)
					g.queued.Add(-1)
					close(w.done)
				default:
					return
				}
			}
		case w := <-g.queue:
			g.execMu.Lock()
			w.err = w.fn(w.ctx)
			g.execMu.Unlock()
			g.queued.Add(-1)
			close(w.done)
		}
	}
}

// exec runs fn, a blocking collective, on the caller's goroutine when no
// async call is queued before it (see submit), else on the group's.
func (g *Group) exec(ctx context.Context, fn func(ctx context.Context) error) error {
	inline, err := g.lockInline()
	if !inline {
		return g.submit(ctx, fn).Wait(context.Background())
	}
	if err != nil {
		return err
	}
	defer g.execMu.Unlock()
	return fn(ctx)
}

// lockInline takes execMu for a blocking collective on the caller's
// goroutine and returns true, unless an async call is queued (false: the
// call must queue behind it). The error says the group is closed (execMu
// is then not held).
func (g *Group) lockInline() (bool, error) {
	if g.queued.Load() != 0 {
		return false, nil
	}
	g.execMu.Lock()
	select {
	case <-g.stop:
		g.execMu.Unlock()
		return true, fmt.Errorf("dist: group %s is closed", g.name)
	default:
	}
	return true, nil
}

// blockingKey marks the context of a blocking collective (blocking).
type blockingKey struct{}

// blocking marks ctx as a blocking call's: submit may run it on the
// caller's goroutine.
func blocking(ctx context.Context) context.Context {
	return context.WithValue(ctx, blockingKey{}, true)
}

// closedDone is the done channel of a Work that ran on its caller's
// goroutine.
var closedDone = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// submit queues fn on the group's goroutine. A blocking call (ctx from
// blocking) runs on the caller's goroutine instead when no async call is
// queued before it: the hand-off to the group's goroutine and back costs
// microseconds, as much as a small collective itself. Either way the
// group's collectives run one at a time, in call order.
func (g *Group) submit(ctx context.Context, fn func(ctx context.Context) error) *Work {
	if g.queued.Load() == 0 && ctx.Value(blockingKey{}) != nil {
		w := &Work{done: closedDone}
		g.execMu.Lock()
		defer g.execMu.Unlock()
		select {
		case <-g.stop:
			w.err = fmt.Errorf("dist: group %s is closed", g.name)
		default:
			w.err = fn(ctx)
		}
		return w
	}
	w := &Work{ctx: ctx, fn: fn, done: make(chan struct{})}
	g.queued.Add(1)
	select {
	case <-g.stop:
		g.queued.Add(-1)
		w.err = fmt.Errorf("dist: group %s is closed", g.name)
		close(w.done)
	case g.queue <- w:
	}
	return w
}

// submitP2P queues fn on the queue of one peer and direction, so that
// sends and receives (isend/irecv) run concurrently with each other and
// with collectives, in order per peer.
func (g *Group) submitP2P(ctx context.Context, key string, fn func(ctx context.Context) error) *Work {
	g.p2pMu.Lock()
	if g.closing.Load() {
		g.p2pMu.Unlock()
		w := &Work{done: make(chan struct{}), err: fmt.Errorf("dist: group %s is closed", g.name)}
		close(w.done)
		return w
	}
	if g.p2pQ == nil {
		g.p2pQ = map[string]chan *Work{}
	}
	q, ok := g.p2pQ[key]
	if !ok {
		q = make(chan *Work, 64)
		g.p2pQ[key] = q
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			for {
				select {
				case <-g.stop:
					return
				case w := <-q:
					w.err = w.fn(w.ctx)
					close(w.done)
				}
			}
		}()
	}
	g.p2pMu.Unlock()
	w := &Work{ctx: ctx, fn: fn, done: make(chan struct{})}
	select {
	case <-g.stop:
		w.err = fmt.Errorf("dist: group %s is closed", g.name)
		close(w.done)
	case q <- w:
	}
	return w
}

func (g *Group) do(ctx context.Context, fn func(ctx context.Context) error) error {
	w := g.submit(ctx, fn)
	<-w.done
	return w.err
}
