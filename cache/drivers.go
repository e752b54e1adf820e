//go:build !gotpu_noremote

package cache

// Remote-tier drivers registered with gocloud.dev/blob's default URL mux.
// gs:// and azblob:// are opt-in (build tags gotpu_gcs and gotpu_azure):
// their SDKs would more than double the binary; S3-compatible endpoints
// (AWS, MinIO, Ceph, R2, GCS's XML interoperability API) work by default.
import (
	_ "gocloud.dev/blob/fileblob" // file:///path
	_ "gocloud.dev/blob/memblob"  // mem:// (tests, single-process experiments)
	_ "gocloud.dev/blob/s3blob"   // s3://bucket (AWS S3 and S3-protocol stores)
)
