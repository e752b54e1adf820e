//go:build gotpu_remote || gotpu_gcs || gotpu_azure

package cache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// RemoteDrivers says which implementation of the remote tier this build
// has: "builtin" (the default: s3://, file:// and mem:// with no cloud
// SDK) or "gocloud" (-tags gotpu_remote: gocloud.dev's drivers, the AWS
// SDK's credential chain, gs:// and azblob:// with their tags).
const RemoteDrivers = "gocloud"

// remoteTier is tier 3: entries in a gocloud.dev/blob bucket, with the same
// format and key layout as the disk tier.
type remoteTier struct {
	url      string // redacted, for messages
	bucket   *blob.Bucket
	maxEntry int64
}

// openRemote opens the bucket at rawURL ("s3://bucket?region=...",
// "gs://bucket", "azblob://container", "file:///path", "mem://").
func openRemote(ctx context.Context, rawURL string, maxEntry int64) (*remoteTier, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%w: bad URL: %v", ErrRemote, err)
	}
	red := u.Redacted()
	b, err := blob.OpenBucket(ctx, rawURL)
	if err != nil {
		hint := ""
		if tag, ok := optInDrivers[u.Scheme]; ok && strings.Contains(err.Error(), "no driver registered") {
			hint = " (this gotpu was built without the " + u.Scheme + ":// driver: rebuild with -tags " + tag + ")"
		}
		return nil, fmt.Errorf("%w: open %s: %v%s", ErrRemote, red, err, hint)
	}
	return &remoteTier{url: red, bucket: b, maxEntry: maxEntry}, nil
}

// optInDrivers are the bucket schemes whose drivers are behind build tags.
var optInDrivers = map[string]string{"gs": "gotpu_gcs", "azblob": "gotpu_azure"}

// errRemoteMiss is load's error for an entry that does not exist.
var errRemoteMiss = errors.New("cache: not in remote tier")

// load fetches and validates the entry for hash. It returns an error
// wrapping errRemoteMiss for a missing entry, ErrCorrupt for an invalid one
// and ErrRemote for a failed read.
func (r *remoteTier) load(ctx context.Context, hash string) (EntryMeta, []byte, int64, error) {
	key := entryRelPath(hash)
	rd, err := r.bucket.NewReader(ctx, key, nil)
	if err != nil {
		if gcerrors.Code(err) == gcerrors.NotFound {
			return EntryMeta{}, nil, 0, errRemoteMiss
		}
		return EntryMeta{}, nil, 0, fmt.Errorf("%w: read %s/%s: %v", ErrRemote, r.url, key, err)
	}
	defer rd.Close()
	if rd.Size() > r.maxEntry {
		return EntryMeta{}, nil, 0, fmt.Errorf("%w: %s/%s is %d bytes, over the %d-byte limit", ErrCorrupt, r.url, key, rd.Size(), r.maxEntry)
	}
	data, err := io.ReadAll(io.LimitReader(rd, r.maxEntry+1))
	if err != nil {
		return EntryMeta{}, nil, 0, fmt.Errorf("%w: read %s/%s: %v", ErrRemote, r.url, key, err)
	}
	meta, payload, err := decodeEntry(data, hash)
	if err != nil {
		return meta, nil, int64(len(data)), fmt.Errorf("%s/%s: %w", r.url, key, err)
	}
	return meta, payload, int64(len(data)), nil
}

// store uploads the entry for hash. Object stores make the object visible
// only once the upload completes, so readers never see a partial entry.
func (r *remoteTier) store(ctx context.Context, hash string, meta EntryMeta, payload []byte) (int64, error) {
	prefix, err := encodeEntryPrefix(hash, meta, payload)
	if err != nil {
		return 0, err
	}
	key := entryRelPath(hash)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := r.bucket.NewWriter(wctx, key, &blob.WriterOptions{ContentType: "application/octet-stream"})
	if err != nil {
		return 0, fmt.Errorf("%w: write %s/%s: %v", ErrRemote, r.url, key, err)
	}
	_, err = w.Write(prefix)
	if err == nil {
		_, err = w.Write(payload)
	}
	if err != nil {
		cancel() // aborts the upload
		_ = w.Close()
		return 0, fmt.Errorf("%w: write %s/%s: %v", ErrRemote, r.url, key, err)
	}
	if err := w.Close(); err != nil {
		return 0, fmt.Errorf("%w: write %s/%s: %v", ErrRemote, r.url, key, err)
	}
	return int64(len(prefix) + len(payload)), nil
}

func (r *remoteTier) close() error {
	if err := r.bucket.Close(); err != nil {
		return fmt.Errorf("%w: close %s: %v", ErrRemote, r.url, err)
	}
	return nil
}
