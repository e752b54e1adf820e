package compile

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/gotpu/gotpu/cache"
	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/internal/version"
	"github.com/gotpu/gotpu/tensor"
)

// Cached programs: UseCache puts the three-tier compile cache (package
// cache; docs/architecture.md, "Programs and the compile cache") under
// every program the process runs — the Fused mode's flushes and
// compile.Fn calls. A program's key is the graph's fingerprint, its
// parameters' dtypes and dimensions, the compile options (precision,
// threads), the device type with the backend's program format, and the
// gotpu version. The cache stores the serialized program
// (device.Program.Marshal); loading one is much cheaper than compiling it.

// Provider is a tensor.ProgramProvider backed by a cache.Cache, with the
// programs it has loaded kept in process.
type Provider struct {
	c *cache.Cache

	mu     sync.Mutex
	loaded map[string]*loadedProgram
	tiers  map[string]int

	restore func() // set by UseCache
}

type loadedProgram struct {
	once sync.Once
	prog device.Program
	err  error
}

// NewProvider returns a provider over c.
func NewProvider(c *cache.Cache) *Provider {
	return &Provider{c: c, loaded: map[string]*loadedProgram{}, tiers: map[string]int{}}
}

// UseCache installs a Provider over c for the whole process and returns it
// with a function that restores the previous provider (the same as
// p.Restore). The process-wide program provider
// (tensor.SetProgramProvider) has this package as its single owner:
// commands and tests install and remove it through UseCache,
// EnableCacheFromEnv and Restore, which nest.
func UseCache(c *cache.Cache) (*Provider, func()) {
	p := NewProvider(c)
	prev := tensor.SetProgramProvider(p.Program)
	var once sync.Once
	p.restore = func() { once.Do(func() { tensor.SetProgramProvider(prev) }) }
	return p, p.restore
}

// Restore puts back the program provider that was installed before
// UseCache (or EnableCacheFromEnv) installed p. It is idempotent, and a
// no-op for a provider that was never installed.
func (p *Provider) Restore() {
	if p.restore != nil {
		p.restore()
	}
}

// EnableCacheFromEnv opens the cache configured by the GOTPU_CACHE_*
// variables (cache.OptionsFromEnv: GOTPU_CACHE_DIR, GOTPU_CACHE_REMOTE,
// GOTPU_CACHE_MODE, ...) and installs it with UseCache. When done, call
// the provider's Restore, then close the cache.
func EnableCacheFromEnv(ctx context.Context) (*cache.Cache, *Provider, error) {
	o, err := cache.OptionsFromEnv()
	if err != nil {
		return nil, nil, fmt.Errorf("compile: cache: %w", err)
	}
	c, err := cache.New(ctx, o)
	if err != nil {
		return nil, nil, fmt.Errorf("compile: cache: %w", err)
	}
	p, _ := UseCache(c)
	return c, p, nil
}

// Key returns the cache key of the program for req.
func Key(req tensor.ProgramRequest, fingerprint string) cache.Key {
	k := cache.Key{
		Fingerprint:    fingerprint,
		Backend:        req.Device.Type,
		BackendVersion: tensor.ProgramFormat(req.Backend),
		GotpuVersion:   version.Version,
		Options: map[string]string{
			"precision": req.Options.Precision,
			"threads":   strconv.Itoa(req.Options.Threads),
		},
	}
	for _, p := range req.Graph.Params {
		k.Inputs = append(k.Inputs, cache.Input{DType: p.Meta.DType.String(), Dims: append([]int{}, p.Meta.Shape...)})
	}
	return k
}

// Program implements tensor.ProgramProvider.
func (p *Provider) Program(ctx context.Context, req tensor.ProgramRequest) (device.Program, tensor.ProgramInfo, error) {
	fp := req.GraphFingerprint()
	key := Key(req, fp)
	hash := key.Hash() + "|" + req.Device.String()
	p.mu.Lock()
	e, hit := p.loaded[hash]
	if !hit {
		e = &loadedProgram{}
		p.loaded[hash] = e
	}
	p.mu.Unlock()
	tier := "memory"
	e.once.Do(func() { e.prog, tier, e.err = p.fetch(ctx, req, key) })
	if e.err != nil {
		p.mu.Lock()
		delete(p.loaded, hash)
		p.mu.Unlock()
		return nil, tensor.ProgramInfo{}, e.err
	}
	p.mu.Lock()
	p.tiers[tier]++
	p.mu.Unlock()
	return e.prog, tensor.ProgramInfo{Fingerprint: fp, Tier: tier}, nil
}

// fetch gets the program's bytes from the cache (compiling on a miss) and
// loads them.
func (p *Provider) fetch(ctx context.Context, req tensor.ProgramRequest, key cache.Key) (device.Program, string, error) {
	var compiled device.Program
	data, src, err := p.c.Get(ctx, key, func(ctx context.Context) ([]byte, error) {
		prog, err := tensor.CompileGraph(ctx, req.Device, req.Backend, req.Graph, req.Options)
		if err != nil {
			return nil, err
		}
		compiled = prog
		return prog.Marshal()
	})
	if err != nil {
		return nil, "", fmt.Errorf("compile: program %s: %w", key, err)
	}
	if compiled != nil {
		return compiled, "compiled", nil
	}
	prog, err := tensor.LoadProgram(req.Device, req.Backend, data)
	if err != nil {
		// The entry passed its checksum but this build cannot load it (a
		// format change without a version bump): compile instead.
		if errors.Is(err, device.ErrProgramFormat) && p.c.Mode() == cache.ModeReadWrite {
			prog, cerr := tensor.CompileGraph(ctx, req.Device, req.Backend, req.Graph, req.Options)
			if cerr == nil {
				return prog, "compiled", nil
			}
		}
		return nil, "", fmt.Errorf("compile: loading program %s from the %s tier: %w", key, src, err)
	}
	return prog, src.String(), nil
}

// Tiers returns how many program requests each tier served: "memory"
// (loaded in this process), "disk", "remote", "compiled".
func (p *Provider) Tiers() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := make(map[string]int, len(p.tiers))
	for k, v := range p.tiers {
		m[k] = v
	}
	return m
}

// Measure compiles req's graph cold (no cache) and loads the serialized
// program back, returning both times: the warm-start speed-up a cache gives.
func Measure(ctx context.Context, req tensor.ProgramRequest) (compile, load time.Duration, err error) {
	t0 := time.Now()
	prog, err := tensor.CompileGraph(ctx, req.Device, req.Backend, req.Graph, req.Options)
	if err != nil {
		return 0, 0, err
	}
	compile = time.Since(t0)
	data, err := prog.Marshal()
	if err != nil {
		return 0, 0, err
	}
	t1 := time.Now()
	if _, err := tensor.LoadProgram(req.Device, req.Backend, data); err != nil {
		return 0, 0, err
	}
	return compile, time.Since(t1), nil
}
