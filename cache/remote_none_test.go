//go:build !gotpu_remote && !gotpu_gcs && !gotpu_azure

package cache

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestRemoteNeedsTag: the default build has no remote tier; configuring one
// fails New with an ErrRemote that names the build tag and redacts secrets.
func TestRemoteNeedsTag(t *testing.T) {
	if HasRemote {
		t.Fatal("HasRemote is true in a build without gotpu_remote")
	}
	for _, url := range []string{
		"s3://bucket?region=us-east-1",
		"file:///tmp/x",
		"mem://",
		"gs://user:secret@bucket",
	} {
		t.Run(url, func(t *testing.T) {
			c, err := New(context.Background(), Options{NoDisk: true, Remote: url})
			if err == nil {
				c.Close()
				t.Fatal("New succeeded without the remote tier")
			}
			if !errors.Is(err, ErrRemote) {
				t.Fatalf("error %v does not wrap ErrRemote", err)
			}
			for _, want := range []string{"-tags gotpu_remote", "go build"} {
				if !strings.Contains(err.Error(), want) {
					t.Fatalf("error %q does not say %q", err, want)
				}
			}
			if strings.Contains(err.Error(), "secret") {
				t.Fatalf("error %q leaks the URL's password", err)
			}
		})
	}
}
