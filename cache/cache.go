package cache

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sync"
	"time"
)

// ErrMiss is wrapped by Get's error in a cache-only mode when no tier has
// the key; the message names the key.
var ErrMiss = errors.New("cache: miss in cache-only mode")

// ErrRemote is wrapped by errors of the remote tier (opening the bucket,
// reading or writing an entry). Without StrictRemote they are logged and
// the cache carries on; with it they are returned.
var ErrRemote = errors.New("cache: remote tier")

// Source says where Get's payload came from.
type Source int

const (
	// SourceNone is Get's Source when it fails.
	SourceNone Source = iota
	// SourceMemory: the in-process tier.
	SourceMemory
	// SourceDisk: the host-shared directory (tier 2), possibly written by
	// another process that compiled while this one waited for the key's lock.
	SourceDisk
	// SourceRemote: the remote store (tier 3); the entry was copied to tier 2.
	SourceRemote
	// SourceCompiled: no tier had it; the compile function produced it.
	SourceCompiled
)

// String returns "memory", "disk", "remote", "compiled" or "none".
func (s Source) String() string {
	switch s {
	case SourceMemory:
		return "memory"
	case SourceDisk:
		return "disk"
	case SourceRemote:
		return "remote"
	case SourceCompiled:
		return "compiled"
	}
	return "none"
}

// CompileFunc produces the payload (a serialized executable) for a key on
// a miss. It should honour ctx.
type CompileFunc func(ctx context.Context) ([]byte, error)

// TierStats are the counters of one tier.
type TierStats struct {
	// Hits counts requests the tier served.
	Hits int64 `json:"hits"`
	// Misses counts requests that looked in the tier and did not find the key.
	Misses int64 `json:"misses"`
	// Writes counts entries written to the tier.
	Writes int64 `json:"writes"`
	// Corrupt counts invalid entries found (and discarded) in the tier.
	Corrupt int64 `json:"corrupt"`
	// Errors counts failed reads and writes other than corrupt entries.
	Errors int64 `json:"errors"`
	// BytesRead and BytesWritten count entry bytes moved (disk and remote).
	BytesRead    int64 `json:"bytes_read"`
	BytesWritten int64 `json:"bytes_written"`
	// Entries and Bytes are the tier's current contents (memory tier only).
	Entries int64 `json:"entries"`
	Bytes   int64 `json:"bytes"`
	// Evictions counts entries dropped to stay within budget (memory tier only).
	Evictions int64 `json:"evictions"`
}

// Stats are a Cache's counters since it was created.
type Stats struct {
	Memory TierStats `json:"memory"`
	Disk   TierStats `json:"disk"`
	Remote TierStats `json:"remote"`
	// Waits counts requests that waited for another goroutine's lookup or
	// compile of the same key (single-flight) instead of doing their own.
	Waits int64 `json:"waits"`
	// Compiles counts calls of the compile function, CompileErrors those
	// that failed, CompileTime their total duration.
	Compiles      int64         `json:"compiles"`
	CompileErrors int64         `json:"compile_errors"`
	CompileTime   time.Duration `json:"compile_ns"`
}

// Cache is the three-tier compile cache. It is safe for concurrent use;
// create it with New and release it with Close.
type Cache struct {
	opts   Options
	log    *slog.Logger
	mem    *memTier
	disk   *diskTier   // nil if disabled
	remote *remoteTier // nil if not configured

	mu      sync.Mutex
	flights map[string]*flight

	smu   sync.Mutex
	stats Stats
}

// flight is one in-progress lookup-or-compile of a key that concurrent
// requests for the same key wait on.
type flight struct {
	done chan struct{}
	// Set before done is closed:
	payload  []byte
	src      Source
	err      error
	canceled bool // err came from the leader's own context being done
}

// New creates a Cache. It opens the remote bucket (a bad URL is an error
// wrapping ErrRemote) but creates the disk directory only when it first
// writes. If opts.Dir is empty and there is no default directory, the disk
// tier is disabled with a warning.
func New(ctx context.Context, opts Options) (*Cache, error) {
	c := &Cache{opts: opts, log: opts.Logger, flights: make(map[string]*flight)}
	if c.log == nil {
		c.log = slog.Default()
	}
	if opts.MemoryBytes == 0 {
		opts.MemoryBytes = DefaultMemoryBytes
	}
	c.mem = newMemTier(opts.MemoryBytes)
	if opts.MaxEntryBytes <= 0 {
		opts.MaxEntryBytes = DefaultMaxEntryBytes
	}
	if !opts.NoDisk {
		dir := opts.Dir
		if dir == "" {
			d, err := DefaultDir()
			if err != nil {
				c.log.Warn("gotpu cache: disk tier disabled", "err", err)
			}
			dir = d
		}
		if dir != "" {
			c.disk = &diskTier{dir: dir, maxEntry: opts.MaxEntryBytes}
		}
	}
	if opts.Remote != "" {
		r, err := openRemote(ctx, opts.Remote, opts.MaxEntryBytes)
		if err != nil {
			return nil, err
		}
		c.remote = r
	}
	c.opts = opts
	return c, nil
}

// Dir returns the disk tier's directory, or "" if the tier is disabled.
func (c *Cache) Dir() string {
	if c.disk == nil {
		return ""
	}
	return c.disk.dir
}

// Mode returns the cache's mode.
func (c *Cache) Mode() Mode { return c.opts.Mode }

// Close releases the remote bucket. The Cache must not be used afterwards.
func (c *Cache) Close() error {
	if c.remote != nil {
		return c.remote.close()
	}
	return nil
}

// Stats returns a snapshot of the cache's counters.
func (c *Cache) Stats() Stats {
	c.smu.Lock()
	s := c.stats
	c.smu.Unlock()
	n, b, ev := c.mem.usage()
	s.Memory.Entries, s.Memory.Bytes, s.Memory.Evictions = int64(n), b, ev
	return s
}

// count applies f to the stats under their lock.
func (c *Cache) count(f func(s *Stats)) {
	c.smu.Lock()
	f(&c.stats)
	c.smu.Unlock()
}

func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// Get returns the payload for key: from the in-process tier, else the disk
// tier, else the remote tier, else by calling compile (unless the cache is
// in a cache-only mode, where that is an error wrapping ErrMiss). A
// compiled payload is written to every tier; a remote one to the disk and
// in-process tiers.
//
// Concurrent Gets of one key in this process share one lookup and compile;
// across processes sharing a disk directory, a per-key file lock makes one
// process compile while the others wait and then read its entry. Waiting
// (for either) ends with ctx's error when ctx is done.
//
// Corrupt entries (bad checksum, truncated) are never returned: they are
// logged, counted, removed and recompiled. The returned payload is shared
// with other callers and must not be modified.
func (c *Cache) Get(ctx context.Context, key Key, compile CompileFunc) ([]byte, Source, error) {
	if err := key.Validate(); err != nil {
		return nil, SourceNone, err
	}
	hash := key.Hash()
	for {
		if err := ctx.Err(); err != nil {
			return nil, SourceNone, fmt.Errorf("cache: get %s: %w", key, err)
		}
		if p, ok := c.mem.get(hash); ok {
			c.count(func(s *Stats) { s.Memory.Hits++ })
			return p, SourceMemory, nil
		}
		c.mu.Lock()
		if p, ok := c.mem.get(hash); ok { // filled since the check above
			c.mu.Unlock()
			c.count(func(s *Stats) { s.Memory.Hits++ })
			return p, SourceMemory, nil
		}
		if f, ok := c.flights[hash]; ok {
			c.mu.Unlock()
			c.count(func(s *Stats) { s.Memory.Misses++; s.Waits++ })
			select {
			case <-ctx.Done():
				return nil, SourceNone, fmt.Errorf("cache: waiting for %s: %w", key, ctx.Err())
			case <-f.done:
			}
			if f.canceled {
				continue // the leader gave up; this request is still live: retry
			}
			return f.payload, f.src, f.err
		}
		f := &flight{done: make(chan struct{})}
		c.flights[hash] = f
		c.mu.Unlock()
		c.count(func(s *Stats) { s.Memory.Misses++ })
		c.lead(ctx, key, hash, compile, f)
		return f.payload, f.src, f.err
	}
}

// lead resolves a key for its flight and then releases the waiters, even
// if compile panics (the panic is re-raised after the waiters get an error).
func (c *Cache) lead(ctx context.Context, key Key, hash string, compile CompileFunc, f *flight) {
	finished := false
	defer func() {
		if !finished {
			f.payload, f.src, f.err = nil, SourceNone, fmt.Errorf("cache: compile of %s panicked", key)
		}
		c.mu.Lock()
		delete(c.flights, hash)
		c.mu.Unlock()
		close(f.done)
	}()
	p, src, err := c.resolve(ctx, key, hash, compile)
	if err == nil {
		c.mem.add(hash, p)
	}
	f.payload, f.src, f.err = p, src, err
	f.canceled = err != nil && isContextErr(err) && ctx.Err() != nil
	finished = true
}

// resolve looks a key up in the disk and remote tiers and compiles it on a
// miss, writing the result back.
func (c *Cache) resolve(ctx context.Context, key Key, hash string, compile CompileFunc) ([]byte, Source, error) {
	readOnly := c.opts.Mode == ModeReadOnly
	release := func() {} // releases the key's disk lock, if held
	if c.disk != nil {
		// Fast path: no lock for an entry that is already there.
		if _, p, n, err := c.disk.load(hash); err == nil {
			c.diskHit(n)
			return p, SourceDisk, nil
		} else if readOnly {
			c.diskFailure(hash, err)
		} else {
			unlock, lerr := c.lockKey(ctx, hash)
			if lerr != nil {
				if isContextErr(lerr) {
					return nil, SourceNone, fmt.Errorf("cache: get %s: %w", key, lerr)
				}
				// A read-only or broken directory: carry on without the
				// lock (the worst case is a duplicate compile).
				c.count(func(s *Stats) { s.Disk.Errors++ })
				c.log.Warn("gotpu cache: cannot lock key; compiling without the lock", "key", hash, "err", lerr)
			} else {
				release = func() {
					if unlock == nil {
						return
					}
					if err := unlock(); err != nil {
						c.log.Warn("gotpu cache: unlock", "key", hash, "err", err)
					}
					unlock = nil
				}
				defer release()
			}
			// Another process may have written it while we waited.
			_, p, n, err := c.disk.load(hash)
			if err == nil {
				c.diskHit(n)
				return p, SourceDisk, nil
			}
			if errors.Is(err, ErrCorrupt) {
				if rerr := c.disk.remove(hash); rerr != nil {
					c.log.Warn("gotpu cache: cannot remove corrupt entry", "key", hash, "err", rerr)
				}
			}
			c.diskFailure(hash, err)
		}
	}

	if c.remote != nil {
		meta, p, n, err := c.remote.load(ctx, hash)
		switch {
		case err == nil:
			c.count(func(s *Stats) { s.Remote.Hits++; s.Remote.BytesRead += n })
			if c.disk != nil && !readOnly {
				c.writeDisk(hash, meta, p)
			}
			return p, SourceRemote, nil
		case errors.Is(err, errRemoteMiss):
			c.count(func(s *Stats) { s.Remote.Misses++ })
		case errors.Is(err, ErrCorrupt):
			c.count(func(s *Stats) { s.Remote.Misses++; s.Remote.Corrupt++; s.Remote.BytesRead += n })
			c.log.Warn("gotpu cache: corrupt entry discarded", "tier", "remote", "key", hash, "err", err)
		case isContextErr(err) && ctx.Err() != nil:
			return nil, SourceNone, fmt.Errorf("cache: get %s: %w", key, ctx.Err())
		default:
			c.count(func(s *Stats) { s.Remote.Misses++; s.Remote.Errors++ })
			if c.opts.StrictRemote {
				return nil, SourceNone, fmt.Errorf("cache: get %s: %w", key, err)
			}
			c.log.Warn("gotpu cache: remote read failed", "key", hash, "err", err)
		}
	}

	if c.opts.Mode != ModeReadWrite {
		return nil, SourceNone, fmt.Errorf("%w: %s (mode %s)", ErrMiss, key, c.opts.Mode)
	}
	if compile == nil {
		return nil, SourceNone, fmt.Errorf("cache: %s is not cached and no compile function was given", key)
	}
	start := time.Now()
	p, err := compile(ctx)
	d := time.Since(start)
	c.count(func(s *Stats) {
		s.Compiles++
		s.CompileTime += d
		if err != nil {
			s.CompileErrors++
		}
	})
	if err != nil {
		return nil, SourceNone, fmt.Errorf("cache: compile %s: %w", key, err)
	}
	meta := EntryMeta{Key: key, Created: time.Now().UTC(), CompileTime: d}
	if c.disk != nil {
		c.writeDisk(hash, meta, p)
	}
	// Processes waiting for the key can read the entry now, without waiting
	// for the upload.
	release()
	if c.remote != nil {
		n, err := c.remote.store(ctx, hash, meta, p)
		if err != nil {
			c.count(func(s *Stats) { s.Remote.Errors++ })
			if c.opts.StrictRemote {
				return nil, SourceNone, fmt.Errorf("cache: store %s: %w", key, err)
			}
			c.log.Warn("gotpu cache: remote write failed", "key", hash, "err", err)
		} else {
			c.count(func(s *Stats) { s.Remote.Writes++; s.Remote.BytesWritten += n })
		}
	}
	return p, SourceCompiled, nil
}

func (c *Cache) diskHit(n int64) {
	c.count(func(s *Stats) { s.Disk.Hits++; s.Disk.BytesRead += n })
}

// lockKey takes the disk tier's lock for hash, creating its shard
// directory first.
func (c *Cache) lockKey(ctx context.Context, hash string) (unlockFunc, error) {
	if err := mkdirSynced(c.disk.shardDir(hash)); err != nil {
		return nil, err
	}
	return lockFile(ctx, c.disk.lockPath(hash))
}

// diskFailure records a disk-tier lookup that did not produce an entry.
func (c *Cache) diskFailure(hash string, err error) {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		c.count(func(s *Stats) { s.Disk.Misses++ })
	case errors.Is(err, ErrCorrupt):
		c.count(func(s *Stats) { s.Disk.Misses++; s.Disk.Corrupt++ })
		c.log.Warn("gotpu cache: corrupt entry discarded", "tier", "disk", "key", hash, "err", err)
	default:
		c.count(func(s *Stats) { s.Disk.Misses++; s.Disk.Errors++ })
		c.log.Warn("gotpu cache: disk read failed", "key", hash, "err", err)
	}
}

// writeDisk stores an entry in the disk tier; failure is logged, not fatal:
// the caller has the payload.
func (c *Cache) writeDisk(hash string, meta EntryMeta, p []byte) {
	n, err := c.disk.store(hash, meta, p)
	if err != nil {
		c.count(func(s *Stats) { s.Disk.Errors++ })
		c.log.Warn("gotpu cache: disk write failed", "key", hash, "err", err)
		return
	}
	c.count(func(s *Stats) { s.Disk.Writes++; s.Disk.BytesWritten += n })
}
