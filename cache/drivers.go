//go:build gotpu_remote || gotpu_gcs || gotpu_azure

package cache

// Remote-tier drivers registered with gocloud.dev/blob's default URL mux.
// The remote tier itself is opt-in (build tag gotpu_remote): gocloud.dev,
// the AWS SDK, OpenTelemetry and gRPC would triple the binary and double a
// cold build. With it, S3-compatible endpoints (AWS, MinIO, Ceph, R2, GCS's
// XML interoperability API), file:// and mem:// work; gs:// and azblob://
// need the gotpu_gcs and gotpu_azure tags on top (either one also enables
// the tier).
import (
	_ "gocloud.dev/blob/fileblob" // file:///path
	_ "gocloud.dev/blob/memblob"  // mem:// (tests, single-process experiments)
	_ "gocloud.dev/blob/s3blob"   // s3://bucket (AWS S3 and S3-protocol stores)
)
