package cache

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gotpu/gotpu/cache/cachetest"
)

// fileRemote returns a file:// bucket URL over a fresh directory.
func fileRemote(t *testing.T) string {
	t.Helper()
	return "file://" + filepath.ToSlash(t.TempDir())
}

// s3Remote is cachetest.S3Remote: a real S3-protocol server for the test.
func s3Remote(t *testing.T) string { return cachetest.S3Remote(t) }

var remotes = []struct {
	name string
	url  func(t *testing.T) string
}{
	{"file", fileRemote},
	{"s3", s3Remote},
}

func TestRemoteTier(t *testing.T) {
	for _, r := range remotes {
		t.Run(r.name, func(t *testing.T) {
			url := r.url(t)
			ctx := context.Background()
			k := baseKey()

			// Process A compiles and publishes.
			a, _ := newTestCache(t, Options{Remote: url})
			comp := &counter{payload: []byte("exe from A")}
			if _, src, err := a.Get(ctx, k, comp.compile); err != nil || src != SourceCompiled {
				t.Fatalf("A: %v, %v", src, err)
			}
			if s := a.Stats(); s.Remote.Writes != 1 || s.Remote.Misses != 1 || s.Remote.BytesWritten == 0 {
				t.Fatalf("A remote stats %+v", s.Remote)
			}

			// Process C: empty disk tier, same remote: tier-3 hit, copied to tier 2.
			cdir := t.TempDir()
			c, _ := newTestCache(t, Options{Dir: cdir, Remote: url})
			for i, want := range []Source{SourceRemote, SourceMemory} {
				p, src, err := c.Get(ctx, k, comp.compile)
				if err != nil || src != want || string(p) != "exe from A" {
					t.Fatalf("C get %d: %q, %v, %v; want %v", i, p, src, err, want)
				}
			}
			if s := c.Stats(); s.Remote.Hits != 1 || s.Disk.Misses != 1 || s.Disk.Writes != 1 || s.Compiles != 0 {
				t.Fatalf("C stats %+v", s)
			}
			// ... and a later process on C's host gets it from disk without the remote.
			d, _ := newTestCache(t, Options{Dir: cdir})
			if p, src, err := d.Get(ctx, k, nil); err != nil || src != SourceDisk || string(p) != "exe from A" {
				t.Fatalf("D: %q, %v, %v", p, src, err)
			}
			if comp.n.Load() != 1 {
				t.Fatalf("compiled %d times, want 1", comp.n.Load())
			}

			// Cache-only with an empty disk tier but a populated remote: a hit.
			e, _ := newTestCache(t, Options{Remote: url, Mode: ModeOnly})
			if _, src, err := e.Get(ctx, k, nil); err != nil || src != SourceRemote {
				t.Fatalf("cache-only remote hit: %v, %v", src, err)
			}
			// ... and a key nobody compiled is an ErrMiss.
			if _, _, err := e.Get(ctx, keyN(99), nil); !errors.Is(err, ErrMiss) {
				t.Fatalf("cache-only remote miss: %v", err)
			}
		})
	}
}

func TestCorruptRemoteEntryRecompiled(t *testing.T) {
	for _, r := range remotes {
		for _, tc := range corruptions {
			t.Run(r.name+"/"+tc.name, func(t *testing.T) {
				url := r.url(t)
				ctx := context.Background()
				k := baseKey()
				a, _ := newTestCache(t, Options{Remote: url})
				if _, _, err := a.Get(ctx, k, (&counter{payload: []byte("good")}).compile); err != nil {
					t.Fatal(err)
				}
				mutateRemote(t, url, k, tc.f)

				b, logs := newTestCache(t, Options{Remote: url}) // empty disk tier
				comp := &counter{payload: []byte("recompiled")}
				p, src, err := b.Get(ctx, k, comp.compile)
				if err != nil || src != SourceCompiled || string(p) != "recompiled" || comp.n.Load() != 1 {
					t.Fatalf("got %q from %v (%v); want a recompile, never the corrupt entry", p, src, err)
				}
				if s := b.Stats(); s.Remote.Corrupt != 1 || s.Remote.Writes != 1 {
					t.Fatalf("remote stats %+v\n%s", s.Remote, logs)
				}
				if !strings.Contains(logs.String(), "corrupt entry discarded") || !strings.Contains(logs.String(), "tier=remote") {
					t.Fatalf("no warning: %s", logs)
				}
				// The remote entry was replaced by the recompiled one.
				c, _ := newTestCache(t, Options{Remote: url})
				if p, src, err := c.Get(ctx, k, nil); err != nil || src != SourceRemote || string(p) != "recompiled" {
					t.Fatalf("after repair: %q, %v, %v", p, src, err)
				}
			})
		}
	}
}

// brokenFileRemote returns a file:// bucket whose directory is replaced by
// a regular file after the bucket is opened, so every read and write fails.
func brokenFileRemote(t *testing.T) (url string, breakIt func()) {
	dir := filepath.Join(t.TempDir(), "bucket")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return "file://" + filepath.ToSlash(dir), func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dir, []byte("not a directory"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRemoteErrorsBestEffortOrStrict(t *testing.T) {
	for _, strict := range []bool{false, true} {
		t.Run(map[bool]string{false: "best-effort", true: "strict"}[strict], func(t *testing.T) {
			url, breakIt := brokenFileRemote(t)
			c, logs := newTestCache(t, Options{Remote: url, StrictRemote: strict})
			breakIt()
			p, src, err := c.Get(context.Background(), baseKey(), (&counter{payload: []byte("x")}).compile)
			if strict {
				if !errors.Is(err, ErrRemote) {
					t.Fatalf("strict: err = %v, want ErrRemote", err)
				}
				return
			}
			if err != nil || src != SourceCompiled || string(p) != "x" {
				t.Fatalf("best effort: %q, %v, %v", p, src, err)
			}
			if s := c.Stats(); s.Remote.Errors != 2 { // the read and the write
				t.Fatalf("remote stats %+v, want 2 errors", s.Remote)
			}
			if !strings.Contains(logs.String(), "remote read failed") || !strings.Contains(logs.String(), "remote write failed") {
				t.Fatalf("warnings missing: %s", logs)
			}
		})
	}
}

func TestRemoteBadURL(t *testing.T) {
	for _, u := range []string{"nosuchscheme://x", "s3://bucket?nosuchparam=1", "::bad"} {
		if _, err := New(context.Background(), Options{NoDisk: true, Remote: u}); !errors.Is(err, ErrRemote) {
			t.Errorf("New(remote %q) = %v, want ErrRemote", u, err)
		}
	}
	if _, err := New(context.Background(), Options{NoDisk: true, Remote: "gs://bucket"}); err != nil &&
		strings.Contains(err.Error(), "no driver registered") && !strings.Contains(err.Error(), "-tags gotpu_gcs") {
		t.Errorf("gs:// without its driver: %v, want a hint naming the build tag", err)
	}
}

// mem:// buckets live in one process; the tier works over them too.
func TestRemoteMem(t *testing.T) {
	c, _ := newTestCache(t, Options{NoDisk: true, Remote: "mem://"})
	if _, src, err := c.Get(context.Background(), baseKey(), (&counter{payload: []byte("m")}).compile); err != nil || src != SourceCompiled {
		t.Fatalf("%v %v", src, err)
	}
	if s := c.Stats(); s.Remote.Writes != 1 {
		t.Fatalf("%+v", s.Remote)
	}
}
