package tensor

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/device/interp"
	"github.com/gotpu/gotpu/ir"
)

// ProgramRequest asks a ProgramProvider for the compiled form of a graph.
type ProgramRequest struct {
	Device  device.Device
	Backend device.Backend
	Graph   *ir.Graph
	Options device.CompileOptions
	// Reason is why the graph was cut ("read", "trace-end", ...).
	Reason string
	// Fingerprint is Graph's ir.Fingerprint when the caller has it
	// already (empty: the provider computes it).
	Fingerprint string
}

// GraphFingerprint returns the graph's fingerprint: req.Fingerprint, or
// computed.
func (req ProgramRequest) GraphFingerprint() string {
	if req.Fingerprint != "" {
		return req.Fingerprint
	}
	return req.Graph.Fingerprint()
}

// ProgramInfo says where a program came from.
type ProgramInfo struct {
	// Fingerprint is the graph's ir.Fingerprint.
	Fingerprint string
	// Tier is "memory" (this process had it), "disk" (tier 2), "remote"
	// (tier 3) or "compiled" (compiled now).
	Tier string
}

// ProgramProvider returns the program for a graph, from a cache or by
// compiling it (with CompileGraph).
type ProgramProvider func(ctx context.Context, req ProgramRequest) (device.Program, ProgramInfo, error)

var provider atomic.Pointer[ProgramProvider]

// SetProgramProvider installs p as the source of compiled programs for the
// Fused mode and traces and returns the previous provider; nil restores
// the default, an in-process map. The provider is process-wide and has a
// single owner, package compile: compile.UseCache installs the three-tier
// cache and (*compile.Provider).Restore puts the previous provider back, so
// installs nest. Other code (commands, tests) goes through compile rather
// than calling this.
func SetProgramProvider(p ProgramProvider) ProgramProvider {
	var np *ProgramProvider
	if p != nil {
		np = &p
	}
	old := provider.Swap(np)
	if old == nil {
		return nil
	}
	return *old
}

// GetProgram returns the program for req from the installed provider
// (SetProgramProvider), or the default in-process cache.
func GetProgram(ctx context.Context, req ProgramRequest) (device.Program, ProgramInfo, error) {
	if p := provider.Load(); p != nil {
		return (*p)(ctx, req)
	}
	return memoryPrograms.get(ctx, req)
}

// ProgramFormat returns the serialized program format of be (a backend
// that compiles whole graphs names its own; the others run the generic
// interpreter's).
func ProgramFormat(be device.Backend) string {
	if c, ok := be.(device.Compiler); ok {
		return c.ProgramFormat()
	}
	return interp.Format
}

// CompileGraph compiles g for dev with the backend's own compiler, or the
// generic node-by-node interpreter when it has none.
func CompileGraph(ctx context.Context, dev device.Device, be device.Backend, g *ir.Graph, opts device.CompileOptions) (device.Program, error) {
	if c, ok := be.(device.Compiler); ok {
		return c.CompileProgram(ctx, dev.Index, g, opts)
	}
	return interp.Compile(be, g, opts)
}

// LoadProgram loads program bytes that Program.Marshal wrote for be.
func LoadProgram(dev device.Device, be device.Backend, data []byte) (device.Program, error) {
	if c, ok := be.(device.Compiler); ok {
		return c.LoadProgram(dev.Index, data)
	}
	return interp.Load(be, data)
}

// programKey is the in-process cache key of a program.
func programKey(req ProgramRequest, fp string) string {
	return fmt.Sprintf("%s|%s|%s|%s|%d", req.Device, ProgramFormat(req.Backend), fp, req.Options.Precision, req.Options.Threads)
}

// memoryCache is the default provider: compiled programs kept for the
// life of the process, one compile per key even under concurrent requests.
type memoryCache struct {
	mu    sync.Mutex
	progs map[string]*memEntry
}

type memEntry struct {
	once sync.Once
	prog device.Program
	err  error
}

var memoryPrograms = &memoryCache{progs: map[string]*memEntry{}}

func (m *memoryCache) get(ctx context.Context, req ProgramRequest) (device.Program, ProgramInfo, error) {
	fp := req.GraphFingerprint()
	key := programKey(req, fp)
	m.mu.Lock()
	e, hit := m.progs[key]
	if !hit {
		e = &memEntry{}
		m.progs[key] = e
	}
	m.mu.Unlock()
	tier := "memory"
	e.once.Do(func() {
		tier = "compiled"
		e.prog, e.err = CompileGraph(ctx, req.Device, req.Backend, req.Graph, req.Options)
	})
	if e.err != nil {
		m.mu.Lock()
		delete(m.progs, key)
		m.mu.Unlock()
		return nil, ProgramInfo{}, e.err
	}
	return e.prog, ProgramInfo{Fingerprint: fp, Tier: tier}, nil
}

// ---------------------------------------------------------------- repeats

// seqDetector finds the repeated op sequences of a training loop, so that
// the Fused mode cuts each iteration into the same program. It keeps
// polynomial prefix hashes of the per-node signatures of the pending graph
// and remembers the hashes of sequences already flushed: when the pending
// sequence equals one of them it is cut there; when it consists of two
// equal halves (a loop that never reads a value), it is cut and the half
// is remembered.
type seqDetector struct {
	h     []uint64 // h[i]: hash of the first i signatures
	pw    []uint64 // pw[i] = seqBase^i
	known map[uint64]int
}

const (
	seqBase      = 1099511628211
	seqMinPeriod = 8
)

func (s *seqDetector) reset() {
	s.h = append(s.h[:0], 0)
	if len(s.pw) == 0 {
		s.pw = append(s.pw, 1)
	}
	if s.known == nil {
		s.known = map[uint64]int{}
	}
}

// nodeSig hashes what the detector compares of a node: its op and its
// inputs' dtypes and shapes (FNV-1a over the name's bytes and the numbers
// themselves, without formatting them).
func nodeSig(n *ir.Node) uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	mix := func(x uint64) { h = (h ^ x) * prime }
	name := n.Name()
	for i := 0; i < len(name); i++ {
		mix(uint64(name[i]))
	}
	for _, v := range n.In {
		if v != nil {
			mix(uint64(v.Meta.DType) + 1<<8)
			mix(uint64(len(v.Meta.Shape)))
			for _, d := range v.Meta.Shape {
				mix(uint64(d))
			}
		}
		mix(1 << 9) // the end of an input, present or not
	}
	return h
}

func (s *seqDetector) add(n *ir.Node) {
	last := s.h[len(s.h)-1]
	s.h = append(s.h, last*seqBase+nodeSig(n))
	for len(s.pw) < len(s.h) {
		s.pw = append(s.pw, s.pw[len(s.pw)-1]*seqBase)
	}
}

// shouldCut reports whether the pending sequence should be cut now.
func (s *seqDetector) shouldCut() bool {
	n := len(s.h) - 1
	if k, ok := s.known[s.h[n]]; ok && k == n {
		return true
	}
	if n >= 2*seqMinPeriod && n%2 == 0 {
		half := n / 2
		second := s.h[n] - s.h[half]*s.pw[half]
		if second == s.h[half] {
			s.known[s.h[half]] = half
			return true
		}
	}
	return false
}

// remember records the flushed sequence as known. Short sequences are not
// remembered: cutting at them would split bigger programs for little gain.
func (s *seqDetector) remember() {
	if n := len(s.h) - 1; n >= seqMinPeriod {
		if len(s.known) > 1024 {
			clear(s.known)
		}
		s.known[s.h[n]] = n
	}
}

// ---------------------------------------------------------------- logging

// logTopics holds the GOTPU_LOG topics ("fuse", "recompile"; "all").
var logTopics = parseLogTopics(os.Getenv("GOTPU_LOG"))

func parseLogTopics(s string) map[string]bool {
	m := map[string]bool{}
	for _, t := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		m[strings.ToLower(t)] = true
	}
	return m
}

// LogEnabled reports whether GOTPU_LOG names topic (or "all").
func LogEnabled(topic string) bool { return logTopics[topic] || logTopics["all"] }

var logMu sync.Mutex

// Logf writes one line for GOTPU_LOG topic to standard error.
func Logf(topic, format string, args ...any) {
	if !LogEnabled(topic) {
		return
	}
	logMu.Lock()
	defer logMu.Unlock()
	fmt.Fprintf(os.Stderr, "gotpu["+topic+"] "+format+"\n", args...)
}

func logFlush(s FlushStats) {
	Logf("fuse", "flush reason=%s device=%s nodes=%d outputs=%d fingerprint=%.16s tier=%s compile=%s run=%s",
		s.Reason, s.Device, s.Nodes, s.Outputs, s.Fingerprint, s.Tier, s.Compile, s.Run)
}
