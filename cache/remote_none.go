//go:build gotpu_noremote

package cache

import (
	"context"
	"fmt"
)

// remoteTier is absent from builds with the gotpu_noremote tag, which leave
// out gocloud.dev and every cloud SDK; configuring a remote is an error.
type remoteTier struct{}

var errRemoteMiss = fmt.Errorf("cache: not in remote tier")

func openRemote(_ context.Context, rawURL string, _ int64) (*remoteTier, error) {
	return nil, fmt.Errorf("%w: this gotpu was built with -tags gotpu_noremote; cannot open %q", ErrRemote, rawURL)
}

func (r *remoteTier) load(context.Context, string) (EntryMeta, []byte, int64, error) {
	return EntryMeta{}, nil, 0, errRemoteMiss
}

func (r *remoteTier) store(context.Context, string, EntryMeta, []byte) (int64, error) {
	return 0, ErrRemote
}

func (r *remoteTier) close() error { return nil }
