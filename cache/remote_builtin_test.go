//go:build !gotpu_remote && !gotpu_gcs && !gotpu_azure

package cache

import (
	"context"
	"testing"
)

// mutateRemote rewrites the remote object of key with f, through the
// built-in object stores.
func mutateRemote(t *testing.T, url string, key Key, f func([]byte) []byte) {
	t.Helper()
	ctx := context.Background()
	st, prefix, err := openObjectStore(url)
	if err != nil {
		t.Fatal(err)
	}
	obj := objectKey(prefix, entryRelPath(key.Hash()))
	data, err := st.get(ctx, obj, 1<<30)
	if err != nil {
		t.Fatalf("remote entry missing: %v", err)
	}
	if err := st.put(ctx, obj, f(data)); err != nil {
		t.Fatal(err)
	}
}
