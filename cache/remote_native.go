//go:build !gotpu_remote && !gotpu_gcs && !gotpu_azure

package cache

import (
	"context"
	"errors"
	"fmt"
	"net/url"
)

// RemoteDrivers says which implementation of the remote tier this build
// has: "builtin" (the default: s3://, file:// and mem:// with no cloud
// SDK) or "gocloud" (-tags gotpu_remote: gocloud.dev's drivers, the AWS
// SDK's credential chain, gs:// and azblob:// with their tags).
const RemoteDrivers = "builtin"

// remoteTier is tier 3 in the default build: entries in an object store of
// objstore.go, with the same format and key layout as the disk tier.
type remoteTier struct {
	url      string // redacted, for messages
	objs     objectStore
	prefix   string
	maxEntry int64
}

// errRemoteMiss is load's error for an entry that does not exist.
var errRemoteMiss = errors.New("cache: not in remote tier")

// openRemote opens the store at rawURL ("s3://bucket?region=...",
// "file:///path", "mem://").
func openRemote(_ context.Context, rawURL string, maxEntry int64) (*remoteTier, error) {
	red := rawURL
	if u, err := url.Parse(rawURL); err == nil {
		red = u.Redacted()
	}
	st, prefix, err := openObjectStore(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%w: open %s: %v", ErrRemote, red, err)
	}
	return &remoteTier{url: red, objs: st, prefix: prefix, maxEntry: maxEntry}, nil
}

// load fetches and validates the entry for hash. It returns an error
// wrapping errRemoteMiss for a missing entry, ErrCorrupt for an invalid one
// and ErrRemote for a failed read.
func (r *remoteTier) load(ctx context.Context, hash string) (EntryMeta, []byte, int64, error) {
	key := objectKey(r.prefix, entryRelPath(hash))
	data, err := r.objs.get(ctx, key, r.maxEntry)
	switch {
	case errors.Is(err, errRemoteMiss):
		return EntryMeta{}, nil, 0, errRemoteMiss
	case errors.Is(err, errTooLarge):
		return EntryMeta{}, nil, 0, fmt.Errorf("%w: %s/%s is over the %d-byte limit", ErrCorrupt, r.url, key, r.maxEntry)
	case err != nil:
		return EntryMeta{}, nil, 0, fmt.Errorf("%w: read %s/%s: %v", ErrRemote, r.url, key, err)
	}
	meta, payload, err := decodeEntry(data, hash)
	if err != nil {
		return meta, nil, int64(len(data)), fmt.Errorf("%s/%s: %w", r.url, key, err)
	}
	return meta, payload, int64(len(data)), nil
}

// store uploads the entry for hash; stores make an object visible only
// once it is complete, so readers never see a partial entry.
func (r *remoteTier) store(ctx context.Context, hash string, meta EntryMeta, payload []byte) (int64, error) {
	prefix, err := encodeEntryPrefix(hash, meta, payload)
	if err != nil {
		return 0, err
	}
	key := objectKey(r.prefix, entryRelPath(hash))
	if err := r.objs.put(ctx, key, prefix, payload); err != nil {
		return 0, fmt.Errorf("%w: write %s/%s: %v", ErrRemote, r.url, key, err)
	}
	return int64(len(prefix) + len(payload)), nil
}

func (r *remoteTier) close() error { return nil }
