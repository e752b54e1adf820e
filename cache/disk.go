package cache

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Layout of the disk tier (and, with "/" separators, of the remote tier):
//
//	<dir>/v1/<first two hex digits of the key hash>/<key hash>.gce   entries
//	<dir>/v1/<..>/<key hash>.lock                                   per-key locks
//	<dir>/v1/<..>/.tmp-<key hash>.gce-*                             writes in progress
//
// Sharding by hash prefix keeps directories small (256 shards).
const (
	layoutVersion = "v1"
	entryExt      = ".gce"
	lockExt       = ".lock"
)

// entryRelPath is the slash-separated path of an entry below the cache root.
func entryRelPath(hash string) string {
	return path.Join(layoutVersion, hash[:2], hash+entryExt)
}

// isKeyHash reports whether s looks like a key hash (64 lower-case hex digits).
func isKeyHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// diskTier is tier 2: one file per key in a host-shared directory.
type diskTier struct {
	dir      string // the configured directory
	maxEntry int64  // entries larger than this are treated as corrupt
}

func (d *diskTier) entryPath(hash string) string {
	return filepath.Join(d.dir, filepath.FromSlash(entryRelPath(hash)))
}

func (d *diskTier) shardDir(hash string) string {
	return filepath.Join(d.dir, layoutVersion, hash[:2])
}

func (d *diskTier) lockPath(hash string) string {
	return filepath.Join(d.shardDir(hash), hash+lockExt)
}

// load reads and validates the entry for hash. A missing entry is an error
// wrapping fs.ErrNotExist, an invalid one wraps ErrCorrupt.
// It also returns the entry's size in bytes.
func (d *diskTier) load(hash string) (EntryMeta, []byte, int64, error) {
	p := d.entryPath(hash)
	f, err := os.Open(p)
	if err != nil {
		return EntryMeta{}, nil, 0, fmt.Errorf("cache: open %s: %w", p, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return EntryMeta{}, nil, 0, fmt.Errorf("cache: stat %s: %w", p, err)
	}
	if fi.Size() > d.maxEntry {
		return EntryMeta{}, nil, 0, fmt.Errorf("%w: %s is %d bytes, over the %d-byte limit", ErrCorrupt, p, fi.Size(), d.maxEntry)
	}
	data := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, data); err != nil {
		// The file shrank under us: only a foreign writer can do that.
		return EntryMeta{}, nil, 0, fmt.Errorf("%w: read %s: %v", ErrCorrupt, p, err)
	}
	meta, payload, err := decodeEntry(data, hash)
	if err != nil {
		return meta, nil, 0, fmt.Errorf("%s: %w", p, err)
	}
	return meta, payload, int64(len(data)), nil
}

// store writes the entry for hash atomically.
func (d *diskTier) store(hash string, meta EntryMeta, payload []byte) (int64, error) {
	prefix, err := encodeEntryPrefix(hash, meta, payload)
	if err != nil {
		return 0, err
	}
	p := d.entryPath(hash)
	if err := mkdirSynced(filepath.Dir(p)); err != nil {
		return 0, err
	}
	if err := writeFileAtomic(p, prefix, payload); err != nil {
		return 0, err
	}
	return int64(len(prefix) + len(payload)), nil
}

// remove deletes the entry for hash; a missing entry is not an error.
func (d *diskTier) remove(hash string) error {
	p := d.entryPath(hash)
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cache: remove %s: %w", p, err)
	}
	return syncDir(filepath.Dir(p))
}

// DirEntry describes one entry of an on-disk cache, as listed by ListDir.
type DirEntry struct {
	// KeyHash is the entry's key hash (its file name without extension).
	KeyHash string
	// Path is the entry's file.
	Path string
	// Size is the file size in bytes (header, metadata and payload).
	Size int64
	// ModTime is the file's modification time (when it was written).
	ModTime time.Time
	// Meta is the entry's metadata; zero if Err is set.
	Meta EntryMeta
	// PayloadSize is the payload length the header declares.
	PayloadSize int64
	// Verified reports whether the whole entry was read and its checksum
	// checked (ListDir with verify).
	Verified bool
	// Err is why the entry is invalid (wraps ErrCorrupt), or nil.
	Err error
}

// DirUsage summarizes an on-disk cache.
type DirUsage struct {
	// Entries is the number of entry files.
	Entries int
	// Bytes is the total size of the entry files.
	Bytes int64
	// TempFiles counts leftovers of interrupted writes.
	TempFiles int
	// TempBytes is the total size of TempFiles.
	TempBytes int64
	// LockFiles counts per-key lock files.
	LockFiles int
}

// walkDir calls fn for every file in the shard directories of dir's
// current layout. Files and directories not made by the cache are ignored.
// A missing dir is an empty cache.
func walkDir(dir string, fn func(shard string, de fs.DirEntry) error) error {
	root := filepath.Join(dir, layoutVersion)
	shards, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cache: read %s: %w", root, err)
	}
	for _, s := range shards {
		if !s.IsDir() || len(s.Name()) != 2 || !isKeyHash(s.Name()+strings.Repeat("0", 62)) {
			continue
		}
		sdir := filepath.Join(root, s.Name())
		files, err := os.ReadDir(sdir)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return fmt.Errorf("cache: read %s: %w", sdir, err)
		}
		for _, f := range files {
			if !f.Type().IsRegular() {
				continue
			}
			if err := fn(sdir, f); err != nil {
				return err
			}
		}
	}
	return nil
}

// entryHashOf returns the key hash an entry file name carries, or "".
func entryHashOf(name string) string {
	h, ok := strings.CutSuffix(name, entryExt)
	if !ok || !isKeyHash(h) {
		return ""
	}
	return h
}

// ListDir lists the entries of the on-disk cache in dir, sorted by key
// hash. It reads each entry's header and metadata; with verify it also
// reads the payload and checks the checksum. Invalid entries are listed
// with Err set; they are not removed.
func ListDir(dir string, verify bool) ([]DirEntry, error) {
	var out []DirEntry
	err := walkDir(dir, func(shard string, de fs.DirEntry) error {
		h := entryHashOf(de.Name())
		if h == "" {
			return nil
		}
		fi, err := de.Info()
		if err != nil {
			return nil // removed while listing
		}
		e := DirEntry{KeyHash: h, Path: filepath.Join(shard, de.Name()), Size: fi.Size(), ModTime: fi.ModTime()}
		e.Meta, e.PayloadSize, e.Err = inspectEntry(e.Path, h, fi.Size(), verify)
		e.Verified = verify && e.Err == nil
		out = append(out, e)
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].KeyHash < out[j].KeyHash })
	return out, err
}

// inspectEntry reads an entry's header and metadata (and with verify the
// whole entry) and checks what it can.
func inspectEntry(p, hash string, size int64, verify bool) (EntryMeta, int64, error) {
	if verify {
		data, err := os.ReadFile(p)
		if err != nil {
			return EntryMeta{}, 0, fmt.Errorf("cache: read %s: %w", p, err)
		}
		meta, payload, err := decodeEntry(data, hash)
		return meta, int64(len(payload)), err
	}
	f, err := os.Open(p)
	if err != nil {
		return EntryMeta{}, 0, fmt.Errorf("cache: open %s: %w", p, err)
	}
	defer f.Close()
	h, meta, err := readEntryInfo(f)
	if err != nil {
		return EntryMeta{}, 0, err
	}
	switch {
	case h.KeyHash != hash:
		return EntryMeta{}, 0, fmt.Errorf("%w: header names key %s", ErrCorrupt, h.KeyHash)
	case h.Size() != size:
		return EntryMeta{}, 0, fmt.Errorf("%w: %d bytes, header says %d (truncated or extended)", ErrCorrupt, size, h.Size())
	}
	return meta, int64(h.PayloadLen), nil
}

// UsageOfDir counts the entries, temporary files and locks of the on-disk
// cache in dir without reading them.
func UsageOfDir(dir string) (DirUsage, error) {
	var u DirUsage
	err := walkDir(dir, func(shard string, de fs.DirEntry) error {
		fi, err := de.Info()
		if err != nil {
			return nil
		}
		switch name := de.Name(); {
		case entryHashOf(name) != "":
			u.Entries++
			u.Bytes += fi.Size()
		case strings.HasPrefix(name, tempPrefix):
			u.TempFiles++
			u.TempBytes += fi.Size()
		case strings.HasSuffix(name, lockExt) && isKeyHash(strings.TrimSuffix(name, lockExt)):
			u.LockFiles++
		}
		return nil
	})
	return u, err
}

// ClearResult reports what ClearDir removed.
type ClearResult struct {
	// Entries and Bytes count the entry files removed and their size.
	Entries int
	Bytes   int64
	// TempFiles counts removed leftovers of interrupted writes.
	TempFiles int
	// LockFiles counts removed lock files (only locks nobody held).
	LockFiles int
	// Errors lists files that could not be removed.
	Errors []error
}

// staleTemp is how old a temporary file must be before ClearDir assumes its
// writer is gone.
const staleTemp = time.Minute

// ClearDir removes the entries of the on-disk cache in dir, one file at a
// time with a single unlink each, so a concurrent reader sees either the
// whole entry or none (a process that opened it keeps reading it) and a
// concurrent writer's rename simply recreates it. Temporary files older
// than a minute and lock files nobody holds are removed too; files the
// cache did not create are left alone. A file that cannot be removed is
// recorded in Errors and the rest are still cleared.
func ClearDir(dir string) (ClearResult, error) {
	var r ClearResult
	err := walkDir(dir, func(shard string, de fs.DirEntry) error {
		name := de.Name()
		p := filepath.Join(shard, name)
		fi, ierr := de.Info()
		if ierr != nil {
			return nil // removed meanwhile
		}
		switch {
		case entryHashOf(name) != "":
			if err := os.Remove(p); err == nil {
				r.Entries++
				r.Bytes += fi.Size()
			} else if !errors.Is(err, fs.ErrNotExist) {
				r.Errors = append(r.Errors, err)
			}
		case strings.HasPrefix(name, tempPrefix):
			if time.Since(fi.ModTime()) <= staleTemp {
				return nil
			}
			if err := os.Remove(p); err == nil {
				r.TempFiles++
			} else if !errors.Is(err, fs.ErrNotExist) {
				r.Errors = append(r.Errors, err)
			}
		case strings.HasSuffix(name, lockExt) && isKeyHash(strings.TrimSuffix(name, lockExt)):
			// Only a lock nobody holds. flock waiters check, once they hold
			// the lock, that its file is still the one at the path, so
			// removing it under the lock cannot let two holders in.
			unlock, err := tryLockFile(p)
			if err != nil {
				return nil // held, or gone
			}
			if err := os.Remove(p); err == nil {
				r.LockFiles++
			}
			_ = unlock()
		}
		return nil
	})
	if err == nil {
		err = syncShards(dir)
	}
	return r, err
}

// syncShards fsyncs every shard directory so that removals are durable.
func syncShards(dir string) error {
	root := filepath.Join(dir, layoutVersion)
	shards, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	for _, s := range shards {
		if s.IsDir() && len(s.Name()) == 2 {
			if err := syncDir(filepath.Join(root, s.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}
