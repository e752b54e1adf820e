//go:build gotpu_remote || gotpu_gcs || gotpu_azure

package cache

// Remote-tier drivers registered with gocloud.dev/blob's default URL mux.
// gocloud.dev is opt-in (build tag gotpu_remote; the default build has
// built-in s3://, file:// and mem:// drivers, objstore.go): with the AWS
// SDK, OpenTelemetry and gRPC it makes the binary 60% larger and a cold
// build 1.5 times as long. gs:// and azblob:// need the gotpu_gcs and
// gotpu_azure tags on top (either one also selects gocloud.dev).
import (
	_ "gocloud.dev/blob/fileblob" // file:///path
	_ "gocloud.dev/blob/memblob"  // mem:// (tests, single-process experiments)
	_ "gocloud.dev/blob/s3blob"   // s3://bucket (AWS S3 and S3-protocol stores)
)
