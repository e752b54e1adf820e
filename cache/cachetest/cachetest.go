// Package cachetest gives tests a real S3-protocol server for the compile
// cache's remote tier.
package cachetest

import (
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// S3Remote starts an in-memory S3-protocol server on 127.0.0.1 for the
// test's lifetime and returns an s3:// URL (bucket gotpu-cache) that points
// the remote tier's S3 driver (built-in, or gocloud's s3blob with -tags
// gotpu_remote) at it, with static test credentials and no access to the
// host's AWS configuration (it sets the AWS_* variables with t.Setenv).
func S3Remote(t *testing.T) string {
	t.Helper()
	be := s3mem.New()
	if err := be.CreateBucket("gotpu-cache"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(be).Server())
	t.Cleanup(srv.Close)
	t.Setenv("AWS_ACCESS_KEY_ID", "test-key")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test-secret")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	return "s3://gotpu-cache?endpoint=" + srv.URL + "&region=us-east-1&use_path_style=true&disable_https=true"
}
