package cache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"

	"github.com/gotpu/gotpu/internal/atomicfile"
)

// The built-in object stores of the remote tier: s3:// (a small S3 client
// with Signature Version 4, s3client.go), file:// and mem://, without any
// cloud SDK. Builds with -tags gotpu_remote use gocloud.dev instead (and
// add gs:// and azblob://); entries have the same keys in both, so either
// build reads what the other wrote.

// objectStore is a bucket of whole objects addressed by slash-separated
// keys.
type objectStore interface {
	// get returns the object's bytes; a missing object is an error
	// wrapping errRemoteMiss; an object over limit bytes is an error
	// wrapping errTooLarge.
	get(ctx context.Context, key string, limit int64) ([]byte, error)
	// put stores parts, concatenated, as the object; readers never see a
	// partial object.
	put(ctx context.Context, key string, parts ...[]byte) error
}

// errTooLarge is get's error for an object over the limit.
var errTooLarge = errors.New("object over the size limit")

// openObjectStore opens the store at rawURL with the built-in drivers. It
// returns the store and the key prefix (the URL's "prefix" parameter).
func openObjectStore(rawURL string) (objectStore, string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, "", fmt.Errorf("bad URL: %w", err)
	}
	q := u.Query()
	prefix := q.Get("prefix")
	q.Del("prefix")
	switch u.Scheme {
	case "s3":
		s, err := newS3Store(u.Host, q)
		return s, prefix, err
	case "file":
		if err := noParams(q); err != nil {
			return nil, "", err
		}
		p := u.Path
		if runtime.GOOS == "windows" && len(p) >= 3 && p[0] == '/' && p[2] == ':' { // file:///C:/dir
			p = p[1:]
		}
		dir := filepath.FromSlash(p)
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return nil, "", fmt.Errorf("file:// bucket %s is not a directory", dir)
		}
		return &fileStore{dir: dir}, prefix, nil
	case "mem":
		if err := noParams(q); err != nil {
			return nil, "", err
		}
		return &memStore{objs: map[string][]byte{}}, prefix, nil
	case "gs", "azblob":
		return nil, "", fmt.Errorf("no %s:// driver in this build: rebuild with -tags 'gotpu_remote gotpu_%s' (go build -tags 'gotpu_remote gotpu_%[2]s' ./cmd/gotpu)", u.Scheme, map[string]string{"gs": "gcs", "azblob": "azure"}[u.Scheme])
	}
	return nil, "", fmt.Errorf("unsupported scheme %q (this build has s3://, file:// and mem://; -tags gotpu_remote adds gocloud.dev's drivers)", u.Scheme)
}

func noParams(q url.Values) error {
	if len(q) == 0 {
		return nil
	}
	return fmt.Errorf("unknown URL parameters %v", slices.Sorted(maps.Keys(q)))
}

// fileStore keeps objects as files under dir, written atomically.
type fileStore struct{ dir string }

func (f *fileStore) path(key string) string { return filepath.Join(f.dir, filepath.FromSlash(key)) }

func (f *fileStore) get(_ context.Context, key string, limit int64) ([]byte, error) {
	fh, err := os.Open(f.path(key))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errRemoteMiss
		}
		return nil, err
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, errTooLarge
	}
	return data, nil
}

func (f *fileStore) put(_ context.Context, key string, parts ...[]byte) error {
	p := f.path(key)
	if err := atomicfile.MkdirAll(filepath.Dir(p)); err != nil {
		return err
	}
	return atomicfile.WriteBytes(p, 0o644, parts...)
}

// memStore is a bucket in this process's memory (tests, experiments).
type memStore struct {
	mu   sync.Mutex
	objs map[string][]byte
}

func (m *memStore) get(_ context.Context, key string, limit int64) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.objs[key]
	if !ok {
		return nil, errRemoteMiss
	}
	if int64(len(b)) > limit {
		return nil, errTooLarge
	}
	return bytes.Clone(b), nil
}

func (m *memStore) put(_ context.Context, key string, parts ...[]byte) error {
	b := bytes.Join(parts, nil)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.objs[key] = b
	return nil
}

// objectKey is an entry's key under the URL's prefix, which is prepended
// as is (as gocloud.dev does: "prefix=a/" puts entries under a/).
func objectKey(prefix, rel string) string { return prefix + rel }
