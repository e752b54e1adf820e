package cache

// Remote-tier drivers registered with gocloud.dev/blob's default URL mux.
import (
	_ "gocloud.dev/blob/fileblob" // file:///path
	_ "gocloud.dev/blob/memblob"  // mem:// (tests, single-process experiments)
	_ "gocloud.dev/blob/s3blob"   // s3://bucket (AWS S3 and S3-protocol stores)
)
