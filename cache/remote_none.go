//go:build !gotpu_remote && !gotpu_gcs && !gotpu_azure

package cache

import (
	"context"
	"errors"
	"fmt"
	"net/url"
)

// remoteTier is absent from the default build, which leaves out gocloud.dev
// and every cloud SDK (build with -tags gotpu_remote to include it);
// configuring a remote is an error that names the tag.
type remoteTier struct{}

// HasRemote reports whether this build has the remote tier (tier 3); it is
// false in the default build and true with -tags gotpu_remote.
const HasRemote = false

// remoteBuildHint is how to get a gotpu with the remote tier; errors of
// builds without it end with it.
const remoteBuildHint = "rebuild with the remote tier: go build -tags gotpu_remote ./cmd/gotpu (add gotpu_gcs or gotpu_azure for gs:// or azblob://)"

var errRemoteMiss = errors.New("cache: not in remote tier")

func openRemote(_ context.Context, rawURL string, _ int64) (*remoteTier, error) {
	red := rawURL
	if u, err := url.Parse(rawURL); err == nil {
		red = u.Redacted()
	}
	return nil, fmt.Errorf("%w: cannot open %s: this gotpu was built without the remote compile-cache tier; %s", ErrRemote, red, remoteBuildHint)
}

func (r *remoteTier) load(context.Context, string) (EntryMeta, []byte, int64, error) {
	return EntryMeta{}, nil, 0, errRemoteMiss
}

func (r *remoteTier) store(context.Context, string, EntryMeta, []byte) (int64, error) {
	return 0, ErrRemote
}

func (r *remoteTier) close() error { return nil }
