package cache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// logBuffer collects slog output from concurrent goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// newTestCache returns a cache over a temporary directory (unless opts
// says otherwise) and the buffer its warnings go to.
func newTestCache(t *testing.T, opts Options) (*Cache, *logBuffer) {
	t.Helper()
	if opts.Dir == "" && !opts.NoDisk {
		opts.Dir = t.TempDir()
	}
	lb := &logBuffer{}
	opts.Logger = slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c, err := New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, lb
}

// counter is a compile function that counts its calls.
type counter struct {
	n       atomic.Int64
	payload []byte
	delay   time.Duration
}

func (c *counter) compile(ctx context.Context) ([]byte, error) {
	c.n.Add(1)
	if c.delay > 0 {
		select {
		case <-time.After(c.delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return c.payload, nil
}

func keyN(i int) Key {
	k := baseKey()
	k.Fingerprint = fmt.Sprintf("%08x", i)
	return k
}

func TestGetTiers(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	comp := &counter{payload: []byte("exe-1")}
	c1, _ := newTestCache(t, Options{Dir: dir})
	k := baseKey()

	want := []Source{SourceCompiled, SourceMemory, SourceMemory}
	for i, w := range want {
		p, src, err := c1.Get(ctx, k, comp.compile)
		if err != nil || src != w || string(p) != "exe-1" {
			t.Fatalf("get %d: %q, %v, %v; want exe-1 from %v", i, p, src, err, w)
		}
	}
	// A second cache (another process) over the same directory.
	c2, _ := newTestCache(t, Options{Dir: dir})
	p, src, err := c2.Get(ctx, k, comp.compile)
	if err != nil || src != SourceDisk || string(p) != "exe-1" {
		t.Fatalf("second cache: %q, %v, %v; want exe-1 from disk", p, src, err)
	}
	if n := comp.n.Load(); n != 1 {
		t.Fatalf("compiled %d times, want 1", n)
	}
	s1, s2 := c1.Stats(), c2.Stats()
	if s1.Compiles != 1 || s1.Memory.Hits != 2 || s1.Memory.Misses != 1 || s1.Disk.Misses != 1 || s1.Disk.Writes != 1 || s1.Memory.Entries != 1 || s1.Memory.Bytes != 5 {
		t.Errorf("stats of the compiling cache: %+v", s1)
	}
	if s1.Disk.BytesWritten <= 5 || s1.CompileTime <= 0 {
		t.Errorf("bytes written %d, compile time %v", s1.Disk.BytesWritten, s1.CompileTime)
	}
	if s2.Compiles != 0 || s2.Disk.Hits != 1 || s2.Disk.BytesRead != s1.Disk.BytesWritten || s2.Disk.Misses != 0 {
		t.Errorf("stats of the reading cache: %+v", s2)
	}
}

func TestSingleFlight(t *testing.T) {
	for _, mem := range []int64{0, -1} { // with and without the memory tier
		t.Run(fmt.Sprintf("memory=%d", mem), func(t *testing.T) {
			c, _ := newTestCache(t, Options{MemoryBytes: mem})
			comp := &counter{payload: []byte("exe"), delay: 50 * time.Millisecond}
			const n = 50
			var wg sync.WaitGroup
			start := make(chan struct{})
			errs := make(chan error, n)
			for i := 0; i < n; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					p, _, err := c.Get(context.Background(), baseKey(), comp.compile)
					if err == nil && string(p) != "exe" {
						err = fmt.Errorf("payload %q", p)
					}
					errs <- err
				}()
			}
			close(start)
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			if got := comp.n.Load(); got != 1 {
				t.Fatalf("compile called %d times by %d goroutines, want 1", got, n)
			}
			s := c.Stats()
			if s.Compiles != 1 || s.Memory.Hits+s.Waits+s.Disk.Hits != n-1 {
				t.Fatalf("stats %+v: want 1 compile and %d shared results", s, n-1)
			}
		})
	}
}

func TestSingleFlightDistinctKeys(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	comp := &counter{payload: []byte("exe")}
	var wg sync.WaitGroup
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if _, _, err := c.Get(context.Background(), keyN(i%8), comp.compile); err != nil {
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	if got := comp.n.Load(); got != 8 {
		t.Fatalf("compiled %d times for 8 keys", got)
	}
}

func TestWaiterContextCanceled(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	release := make(chan struct{})
	started := make(chan struct{})
	leaderDone := make(chan struct{})
	go func() {
		defer close(leaderDone)
		c.Get(context.Background(), baseKey(), func(ctx context.Context) ([]byte, error) {
			close(started)
			<-release
			return []byte("x"), nil
		})
	}()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, src, err := c.Get(ctx, baseKey(), nil)
	close(release)
	// The leader writes its entry after release: let it finish before the
	// test's temporary directory is removed.
	<-leaderDone
	if !errors.Is(err, context.DeadlineExceeded) || src != SourceNone {
		t.Fatalf("waiter: %v, %v; want DeadlineExceeded", src, err)
	}
}

// When the goroutine that is compiling gives up (its context is canceled),
// a waiter whose context is live takes over instead of failing.
func TestLeaderCanceledWaiterRetries(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	lctx, lcancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	leaderDone := make(chan error)
	go func() {
		_, _, err := c.Get(lctx, baseKey(), func(ctx context.Context) ([]byte, error) {
			close(started)
			<-ctx.Done()
			return nil, ctx.Err()
		})
		leaderDone <- err
	}()
	<-started
	waiter := make(chan error)
	var src Source
	go func() {
		var err error
		_, src, err = c.Get(context.Background(), baseKey(), func(ctx context.Context) ([]byte, error) { return []byte("w"), nil })
		waiter <- err
	}()
	for c.Stats().Waits == 0 {
		time.Sleep(time.Millisecond)
	}
	lcancel()
	if err := <-leaderDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("leader: %v, want Canceled", err)
	}
	if err := <-waiter; err != nil || src != SourceCompiled {
		t.Fatalf("waiter: %v, %v; want its own compile", src, err)
	}
}

func TestCompileErrorNotCached(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	boom := errors.New("boom")
	_, _, err := c.Get(context.Background(), baseKey(), func(context.Context) ([]byte, error) { return nil, boom })
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	p, src, err := c.Get(context.Background(), baseKey(), func(context.Context) ([]byte, error) { return []byte("ok"), nil })
	if err != nil || src != SourceCompiled || string(p) != "ok" {
		t.Fatalf("after a failed compile: %q, %v, %v", p, src, err)
	}
	if s := c.Stats(); s.Compiles != 2 || s.CompileErrors != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestCompilePanicReleasesWaiters(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	started := make(chan struct{})
	release := make(chan struct{})
	go func() {
		defer func() { recover() }()
		c.Get(context.Background(), baseKey(), func(context.Context) ([]byte, error) {
			close(started)
			<-release
			panic("compiler bug")
		})
	}()
	<-started
	done := make(chan error)
	go func() {
		_, _, err := c.Get(context.Background(), baseKey(), nil)
		done <- err
	}()
	for c.Stats().Waits == 0 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "panicked") {
			t.Fatalf("waiter err = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("waiter hung after the compile panicked")
	}
}

// corruptions are ways a stored entry can go bad.
var corruptions = []struct {
	name string
	f    func(b []byte) []byte
}{
	{"flip payload byte", func(b []byte) []byte { b[len(b)-3] ^= 0x20; return b }},
	{"flip header byte", func(b []byte) []byte { b[30] ^= 1; return b }},
	{"flip checksum byte", func(b []byte) []byte { b[60] ^= 1; return b }},
	{"truncate payload", func(b []byte) []byte { return b[:len(b)-4] }},
	{"truncate header", func(b []byte) []byte { return b[:20] }},
	{"empty", func(b []byte) []byte { return b[:0] }},
	{"extend", func(b []byte) []byte { return append(b, "junk"...) }},
	{"bad magic", func(b []byte) []byte { copy(b, "NOTGOTPU"); return b }},
}

func TestCorruptDiskEntryRecompiled(t *testing.T) {
	for _, tc := range corruptions {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ctx := context.Background()
			good := []byte("the good executable")
			c1, _ := newTestCache(t, Options{Dir: dir})
			if _, _, err := c1.Get(ctx, baseKey(), (&counter{payload: good}).compile); err != nil {
				t.Fatal(err)
			}
			path := (&diskTier{dir: dir}).entryPath(baseKey().Hash())
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, tc.f(b), 0o644); err != nil {
				t.Fatal(err)
			}
			// A fresh process: nothing in memory.
			c2, logs := newTestCache(t, Options{Dir: dir})
			comp := &counter{payload: []byte("recompiled")}
			p, src, err := c2.Get(ctx, baseKey(), comp.compile)
			if err != nil || src != SourceCompiled || string(p) != "recompiled" {
				t.Fatalf("got %q from %v (%v); want a recompile, never the corrupt entry", p, src, err)
			}
			if comp.n.Load() != 1 {
				t.Fatalf("compiled %d times", comp.n.Load())
			}
			if s := c2.Stats(); s.Disk.Corrupt != 1 || s.Disk.Writes != 1 {
				t.Fatalf("stats %+v: want 1 corrupt, 1 write", s.Disk)
			}
			if !strings.Contains(logs.String(), "corrupt entry discarded") || !strings.Contains(logs.String(), "level=WARN") {
				t.Fatalf("no warning logged: %s", logs)
			}
			// The entry was replaced by a valid one.
			c3, _ := newTestCache(t, Options{Dir: dir})
			p, src, err = c3.Get(ctx, baseKey(), nil)
			if err != nil || src != SourceDisk || string(p) != "recompiled" {
				t.Fatalf("after repair: %q, %v, %v", p, src, err)
			}
		})
	}
}

func TestCacheOnlyMiss(t *testing.T) {
	for _, mode := range []Mode{ModeOnly, ModeReadOnly} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			c, _ := newTestCache(t, Options{Dir: dir, Mode: mode})
			comp := &counter{payload: []byte("x")}
			_, src, err := c.Get(context.Background(), baseKey(), comp.compile)
			if !errors.Is(err, ErrMiss) || src != SourceNone {
				t.Fatalf("err = %v, want ErrMiss", err)
			}
			if !strings.Contains(err.Error(), baseKey().Hash()[:16]) || !strings.Contains(err.Error(), "f32[64,784]") {
				t.Fatalf("error %q does not name the key", err)
			}
			if comp.n.Load() != 0 {
				t.Fatal("cache-only mode compiled")
			}
			// Filled by a read-write cache, it hits.
			rw, _ := newTestCache(t, Options{Dir: dir})
			if _, _, err := rw.Get(context.Background(), baseKey(), comp.compile); err != nil {
				t.Fatal(err)
			}
			p, src, err := c.Get(context.Background(), baseKey(), comp.compile)
			if err != nil || src != SourceDisk || string(p) != "x" {
				t.Fatalf("after fill: %q, %v, %v", p, src, err)
			}
		})
	}
}

func TestReadOnlyWritesNothing(t *testing.T) {
	dir := t.TempDir()
	c, _ := newTestCache(t, Options{Dir: dir, Mode: ModeReadOnly})
	c.Get(context.Background(), baseKey(), nil)
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) != 0 {
		t.Fatalf("readonly mode wrote %v (%v)", ents, err)
	}
}

func TestInvalidKeyAndNilCompile(t *testing.T) {
	c, _ := newTestCache(t, Options{NoDisk: true})
	if _, _, err := c.Get(context.Background(), Key{}, nil); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("empty key: %v", err)
	}
	if _, _, err := c.Get(context.Background(), baseKey(), nil); err == nil {
		t.Fatal("nil compile on a miss succeeded")
	}
}

func TestUnwritableDirStillCompiles(t *testing.T) {
	// A path below a regular file cannot be created, even by root.
	f := t.TempDir() + "/file"
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c, logs := newTestCache(t, Options{Dir: f + "/cache"}) // cannot be created
	p, src, err := c.Get(context.Background(), baseKey(), (&counter{payload: []byte("x")}).compile)
	if err != nil || src != SourceCompiled || string(p) != "x" {
		t.Fatalf("%q, %v, %v", p, src, err)
	}
	if s := c.Stats(); s.Disk.Errors == 0 || !strings.Contains(logs.String(), "level=WARN") {
		t.Fatalf("disk errors not reported: %+v %s", s.Disk, logs)
	}
}

func TestParseModeAndEnv(t *testing.T) {
	tests := []struct {
		in   string
		want Mode
		ok   bool
	}{
		{"", ModeReadWrite, true}, {"readwrite", ModeReadWrite, true}, {"only", ModeOnly, true},
		{"ONLY", ModeOnly, true}, {"readonly", ModeReadOnly, true}, {"sometimes", 0, false},
	}
	for _, tt := range tests {
		m, err := ParseMode(tt.in)
		if (err == nil) != tt.ok || (tt.ok && m != tt.want) {
			t.Errorf("ParseMode(%q) = %v, %v", tt.in, m, err)
		}
	}
	t.Setenv(EnvDir, "/x/y")
	t.Setenv(EnvRemote, "mem://")
	t.Setenv(EnvMode, "only")
	t.Setenv(EnvRemoteStrict, "true")
	t.Setenv(EnvMemoryBytes, "0")
	o, err := OptionsFromEnv()
	if err != nil || o.Dir != "/x/y" || o.Remote != "mem://" || o.Mode != ModeOnly || !o.StrictRemote || o.MemoryBytes >= 0 {
		t.Fatalf("OptionsFromEnv = %+v, %v", o, err)
	}
	t.Setenv(EnvDir, "off")
	if o, _ := OptionsFromEnv(); !o.NoDisk {
		t.Fatal("GOTPU_CACHE_DIR=off did not disable the disk tier")
	}
	for _, kv := range [][2]string{{EnvMode, "bogus"}, {EnvRemoteStrict, "maybe"}, {EnvMemoryBytes, "lots"}} {
		t.Run(kv[0], func(t *testing.T) {
			t.Setenv(kv[0], kv[1])
			if _, err := OptionsFromEnv(); err == nil || !strings.Contains(err.Error(), kv[0]) {
				t.Fatalf("%s=%s: err = %v, want one naming the variable", kv[0], kv[1], err)
			}
		})
	}
}
