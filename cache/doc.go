// Package cache is gotpu's three-tier compile cache: serialized
// executables stored under a structured Key (graph fingerprint, input
// signature, compile options, backend and gotpu versions).
//
//  1. In process: one entry per key, bounded by bytes with LRU eviction;
//     concurrent requests for one key wait for a single lookup/compile.
//  2. A host-shared directory (GOTPU_CACHE_DIR, default
//     os.UserCacheDir()/gotpu/compile): one file per key in shards by
//     hash prefix, written atomically (temporary file, fsync, rename,
//     fsync of the directory), with a per-key file lock so that one
//     process compiles while the others wait and then read its entry.
//  3. A remote store (GOTPU_CACHE_REMOTE, a gocloud.dev/blob-style URL:
//     s3://, file://, mem://), read on a tier-2 miss (and copied to tier
//     2), written after a compile. Remote errors are logged, not fatal,
//     unless StrictRemote (GOTPU_CACHE_REMOTE_STRICT=1) is set. The
//     default build reaches it through built-in drivers (objstore.go, a
//     small SigV4 S3 client) and carries no cloud SDK; -tags gotpu_remote
//     swaps in gocloud.dev (the AWS SDK's credential chain; gs:// and
//     azblob:// with gotpu_gcs or gotpu_azure). Both use the same keys.
//
// Every stored entry carries a header (magic, format version, key hash,
// lengths) and a SHA-256 checksum over header and data; a corrupt or
// truncated entry is discarded with a slog warning and recompiled, never
// returned. In a cache-only mode (GOTPU_CACHE_MODE=only or readonly) a
// miss is an error wrapping ErrMiss. Stats reports per-tier counters.
//
//	c, err := cache.New(ctx, opts) // opts from cache.OptionsFromEnv()
//	exe, src, err := c.Get(ctx, key, func(ctx context.Context) ([]byte, error) {
//		return backend.Compile(ctx, graph)
//	})
package cache
