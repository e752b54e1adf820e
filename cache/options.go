package cache

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Mode says whether the cache may compile on a miss.
type Mode int

const (
	// ModeReadWrite (the default) compiles on a miss and writes the result
	// to every tier.
	ModeReadWrite Mode = iota
	// ModeOnly is cache-only: a miss in every tier is an error wrapping
	// ErrMiss instead of a compile (for production, where a compile would
	// be an outage). An entry found in the remote tier is still copied to
	// the disk tier.
	ModeOnly
	// ModeReadOnly is cache-only and also never writes, takes no locks and
	// leaves corrupt entries in place (for a read-only cache directory).
	ModeReadOnly
)

// String returns the mode's name as ParseMode accepts it.
func (m Mode) String() string {
	switch m {
	case ModeReadWrite:
		return "readwrite"
	case ModeOnly:
		return "only"
	case ModeReadOnly:
		return "readonly"
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
}

// ParseMode parses a GOTPU_CACHE_MODE value: "" or "readwrite" (compile on
// a miss), "only" (cache-only), "readonly" (cache-only, no writes).
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "readwrite", "rw", "default":
		return ModeReadWrite, nil
	case "only", "cache-only", "cacheonly":
		return ModeOnly, nil
	case "readonly", "ro", "read-only":
		return ModeReadOnly, nil
	}
	return 0, fmt.Errorf("cache: unknown cache mode %q (want readwrite, only or readonly)", s)
}

// Environment variables read by OptionsFromEnv.
const (
	// EnvDir is the disk tier's directory; "off" disables the tier.
	EnvDir = "GOTPU_CACHE_DIR"
	// EnvRemote is the remote tier's bucket URL (s3://, file://, mem://;
	// gs:// and azblob:// with their build tags).
	EnvRemote = "GOTPU_CACHE_REMOTE"
	// EnvMode is the cache mode (see ParseMode).
	EnvMode = "GOTPU_CACHE_MODE"
	// EnvRemoteStrict, when true, makes remote-tier errors fail Get.
	EnvRemoteStrict = "GOTPU_CACHE_REMOTE_STRICT"
	// EnvMemoryBytes is the in-process tier's byte budget (0 disables it).
	EnvMemoryBytes = "GOTPU_CACHE_MEMORY_BYTES"
)

// Defaults.
const (
	// DefaultMemoryBytes is the in-process tier's default byte budget.
	DefaultMemoryBytes = 512 << 20
	// DefaultMaxEntryBytes is the default size limit of a stored entry;
	// larger files are treated as corrupt and never read into memory.
	DefaultMaxEntryBytes = 4 << 30
)

// Options configure a Cache. The zero value is the default: a 512 MiB
// in-process tier, the disk tier in DefaultDir, no remote tier, compile on
// a miss.
type Options struct {
	// Dir is the disk tier's directory; "" means DefaultDir.
	Dir string
	// NoDisk disables the disk tier.
	NoDisk bool
	// Remote is the remote tier's bucket URL; "" means no remote tier.
	// Every build has s3:// (with gocloud's region, endpoint,
	// use_path_style, disable_https, anonymous parameters), file:// and
	// mem://: the default build through a built-in client with static
	// credentials (environment or shared credentials file), builds with
	// -tags gotpu_remote through gocloud.dev and the AWS SDK's full
	// credential chain (RemoteDrivers says which); gs:// and azblob://
	// need the gotpu_gcs or gotpu_azure tag. An optional "prefix"
	// parameter puts the entries under a folder.
	Remote string
	// Mode says whether a miss compiles (ModeReadWrite) or fails.
	Mode Mode
	// StrictRemote makes remote-tier errors (unreachable store, failed
	// upload) fail Get instead of being logged.
	StrictRemote bool
	// MemoryBytes is the in-process tier's byte budget: 0 means
	// DefaultMemoryBytes, a negative value disables the tier (single-flight
	// still applies).
	MemoryBytes int64
	// MaxEntryBytes is the largest entry read from the disk or remote tier;
	// 0 means DefaultMaxEntryBytes.
	MaxEntryBytes int64
	// Logger receives warnings (corrupt entries, remote errors); nil means
	// slog.Default().
	Logger *slog.Logger
}

// DefaultDir returns the default disk-tier directory,
// os.UserCacheDir()/gotpu/compile.
func DefaultDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("cache: no default cache directory (set %s): %w", EnvDir, err)
	}
	return filepath.Join(d, "gotpu", "compile"), nil
}

// OptionsFromEnv returns Options configured from the GOTPU_CACHE_*
// environment variables. A malformed value is an error naming the variable.
func OptionsFromEnv() (Options, error) {
	var o Options
	switch d := os.Getenv(EnvDir); strings.ToLower(d) {
	case "off", "none", "0":
		o.NoDisk = true
	default:
		o.Dir = d
	}
	o.Remote = os.Getenv(EnvRemote)
	m, err := ParseMode(os.Getenv(EnvMode))
	if err != nil {
		return o, fmt.Errorf("%s: %w", EnvMode, err)
	}
	o.Mode = m
	if s := os.Getenv(EnvRemoteStrict); s != "" {
		b, err := strconv.ParseBool(s)
		if err != nil {
			return o, fmt.Errorf("cache: %s=%q is not a boolean", EnvRemoteStrict, s)
		}
		o.StrictRemote = b
	}
	if s := os.Getenv(EnvMemoryBytes); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return o, fmt.Errorf("cache: %s=%q is not an integer", EnvMemoryBytes, s)
		}
		if n == 0 {
			n = -1
		}
		o.MemoryBytes = n
	}
	return o, nil
}
