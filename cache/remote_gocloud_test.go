//go:build gotpu_remote || gotpu_gcs || gotpu_azure

package cache

import (
	"context"
	"testing"

	"gocloud.dev/blob"
)

// mutateRemote rewrites the remote object of key with f, through the blob
// API, after checking that the built-in object stores read the same bytes
// at the same key as gocloud.dev wrote (so either build reads the other's
// entries).
func mutateRemote(t *testing.T, url string, key Key, f func([]byte) []byte) {
	t.Helper()
	ctx := context.Background()
	b, err := blob.OpenBucket(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	obj := entryRelPath(key.Hash())
	data, err := b.ReadAll(ctx, obj)
	if err != nil {
		t.Fatalf("remote entry missing: %v", err)
	}
	st, prefix, err := openObjectStore(url)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := st.get(ctx, objectKey(prefix, obj), 1<<30); err != nil || string(got) != string(data) {
		t.Fatalf("built-in store read %d bytes (%v), gocloud %d", len(got), err, len(data))
	}
	if err := b.WriteAll(ctx, obj, f(data), nil); err != nil {
		t.Fatal(err)
	}
}
