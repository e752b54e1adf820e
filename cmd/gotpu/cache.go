package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gotpu/gotpu/cache"
)

// cacheStatsReport is the --json output of `gotpu cache stats`. Keys are stable.
type cacheStatsReport struct {
	Dir       string `json:"dir"`
	Entries   int    `json:"entries"`
	Bytes     int64  `json:"bytes"`
	TempFiles int    `json:"temp_files"`
	TempBytes int64  `json:"temp_bytes"`
	LockFiles int    `json:"lock_files"`
	// Corrupt is only present with --verify.
	Corrupt *int `json:"corrupt,omitempty"`
}

// cacheLsEntry is one element of `gotpu cache ls --json`'s "entries". Keys are stable.
type cacheLsEntry struct {
	KeyHash        string            `json:"key_hash"`
	Path           string            `json:"path"`
	SizeBytes      int64             `json:"size_bytes"`
	PayloadBytes   int64             `json:"payload_bytes"`
	MTime          string            `json:"mtime"`
	Fingerprint    string            `json:"fingerprint"`
	Inputs         []cache.Input     `json:"inputs"`
	Options        map[string]string `json:"options"`
	Backend        string            `json:"backend"`
	BackendVersion string            `json:"backend_version"`
	GotpuVersion   string            `json:"gotpu_version"`
	Created        string            `json:"created"`
	CompileNS      int64             `json:"compile_ns"`
	Verified       bool              `json:"verified"`
	Error          string            `json:"error,omitempty"`
}

// cacheLsReport is the --json output of `gotpu cache ls`. Keys are stable.
type cacheLsReport struct {
	Dir     string         `json:"dir"`
	Entries []cacheLsEntry `json:"entries"`
}

// cacheClearReport is the --json output of `gotpu cache clear`. Keys are stable.
type cacheClearReport struct {
	Dir              string   `json:"dir"`
	RemovedEntries   int      `json:"removed_entries"`
	RemovedBytes     int64    `json:"removed_bytes"`
	RemovedTempFiles int      `json:"removed_temp_files"`
	RemovedLockFiles int      `json:"removed_lock_files"`
	Errors           []string `json:"errors"`
}

// cacheDir resolves the disk tier's directory: --dir, else GOTPU_CACHE_DIR,
// else the default.
func cacheDir(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	opts, err := cache.OptionsFromEnv()
	if err != nil {
		return "", err
	}
	if opts.NoDisk {
		return "", fmt.Errorf("the disk cache is disabled (%s=%s); pass --dir", cache.EnvDir, os.Getenv(cache.EnvDir))
	}
	if opts.Dir != "" {
		return opts.Dir, nil
	}
	return cache.DefaultDir()
}

// checkCacheDir rejects a --dir that exists but is not a directory (a
// missing directory is an empty cache).
func checkCacheDir(dir string) error {
	fi, err := os.Stat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("cache directory %s is not a directory", dir)
	}
	return nil
}

func cacheWriteJSON(w io.Writer, v any) error {
	return writeJSON(w, v)
}

func cacheHumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func newCacheCmd() *cobra.Command {
	var dirFlag string
	cmd := &cobra.Command{
		Use:   "cache",
		Short: "Inspect and clear the on-disk compile cache",
		Long: `Inspect and clear the host-shared tier of gotpu's compile cache: one file per
compiled program, in $GOTPU_CACHE_DIR (default: the user cache directory's
gotpu/compile). --dir overrides the directory. See package cache for the
in-process and remote tiers (GOTPU_CACHE_REMOTE) and cache-only mode
(GOTPU_CACHE_MODE=only|readonly).`,
	}
	cmd.PersistentFlags().StringVar(&dirFlag, "dir", "", "cache directory (default $GOTPU_CACHE_DIR or the user cache directory)")
	cmd.AddCommand(newCacheStatsCmd(&dirFlag), newCacheLsCmd(&dirFlag), newCacheClearCmd(&dirFlag))
	return cmd
}

func newCacheStatsCmd(dirFlag *string) *cobra.Command {
	var asJSON, verify bool
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Count the entries and bytes of the on-disk compile cache",
		Long: `Count the entries and bytes of the on-disk compile cache.

--json prints one object with these stable keys:
  dir         the cache directory
  entries     number of entry files
  bytes       total size of the entry files
  temp_files  leftovers of interrupted writes (removed by clear after a minute)
  temp_bytes  their total size
  lock_files  per-key lock files
  corrupt     entries failing validation (only with --verify)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := cacheDir(*dirFlag)
			if err != nil {
				return err
			}
			if err := checkCacheDir(dir); err != nil {
				return err
			}
			u, err := cache.UsageOfDir(dir)
			if err != nil {
				return err
			}
			r := cacheStatsReport{Dir: dir, Entries: u.Entries, Bytes: u.Bytes, TempFiles: u.TempFiles, TempBytes: u.TempBytes, LockFiles: u.LockFiles}
			if verify {
				ents, err := cache.ListDir(dir, true)
				if err != nil {
					return err
				}
				n := 0
				for _, e := range ents {
					if e.Err != nil {
						n++
					}
				}
				r.Corrupt = &n
			}
			w := cmd.OutOrStdout()
			if asJSON {
				return cacheWriteJSON(w, r)
			}
			fmt.Fprintf(w, "dir:        %s\nentries:    %d\nbytes:      %d (%s)\ntemp files: %d (%s)\nlock files: %d\n",
				r.Dir, r.Entries, r.Bytes, cacheHumanBytes(r.Bytes), r.TempFiles, cacheHumanBytes(r.TempBytes), r.LockFiles)
			if r.Corrupt != nil {
				fmt.Fprintf(w, "corrupt:    %d\n", *r.Corrupt)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON object")
	cmd.Flags().BoolVar(&verify, "verify", false, "read every entry and check its checksum")
	return cmd
}

func newCacheLsCmd(dirFlag *string) *cobra.Command {
	var asJSON, verify bool
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List the entries of the on-disk compile cache",
		Long: `List the entries of the on-disk compile cache with the key each was compiled
for, sorted by key hash. Only headers are read unless --verify, which reads
every entry and checks its checksum. Invalid entries are listed with an error
(and not removed: the cache discards them itself when it next reads them).

--json prints {"dir": ..., "entries": [...]}; each entry has these stable keys:
  key_hash         SHA-256 hex of the key (the file name)
  path             the entry file
  size_bytes       file size
  payload_bytes    size of the stored executable
  mtime            file modification time, RFC 3339, UTC
  fingerprint      graph fingerprint
  inputs           [{"dtype": ..., "dims": [...]}]
  options          compile options (precision included)
  backend          backend name
  backend_version  backend or plugin version
  gotpu_version    gotpu version that compiled it
  created          when it was compiled, RFC 3339, UTC
  compile_ns       compile time in nanoseconds
  verified         true if the checksum was checked (--verify) and matched
  error            why the entry is invalid (absent when valid)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := cacheDir(*dirFlag)
			if err != nil {
				return err
			}
			if err := checkCacheDir(dir); err != nil {
				return err
			}
			ents, err := cache.ListDir(dir, verify)
			if err != nil {
				return err
			}
			r := cacheLsReport{Dir: dir, Entries: []cacheLsEntry{}}
			for _, e := range ents {
				k := e.Meta.Key
				le := cacheLsEntry{
					KeyHash: e.KeyHash, Path: e.Path, SizeBytes: e.Size, PayloadBytes: e.PayloadSize,
					MTime: e.ModTime.UTC().Format(time.RFC3339Nano), Fingerprint: k.Fingerprint, Inputs: k.Inputs,
					Options: k.Options, Backend: k.Backend, BackendVersion: k.BackendVersion, GotpuVersion: k.GotpuVersion,
					CompileNS: int64(e.Meta.CompileTime), Verified: e.Verified,
				}
				if !e.Meta.Created.IsZero() {
					le.Created = e.Meta.Created.UTC().Format(time.RFC3339Nano)
				}
				if le.Inputs == nil {
					le.Inputs = []cache.Input{}
				}
				if le.Options == nil {
					le.Options = map[string]string{}
				}
				if e.Err != nil {
					le.Error = e.Err.Error()
				}
				r.Entries = append(r.Entries, le)
			}
			w := cmd.OutOrStdout()
			if asJSON {
				return cacheWriteJSON(w, r)
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "KEY\tSIZE\tMODIFIED\tBACKEND\tINPUTS\tOPTIONS\tSTATUS")
			for _, e := range r.Entries {
				status := "ok"
				if e.Verified {
					status = "verified"
				}
				if e.Error != "" {
					status = "INVALID: " + e.Error
				}
				var ins []string
				for _, in := range e.Inputs {
					ins = append(ins, in.String())
				}
				var opts []string
				for k, v := range e.Options {
					opts = append(opts, k+"="+v)
				}
				sort.Strings(opts)
				be := e.Backend
				if e.BackendVersion != "" {
					be += "/" + e.BackendVersion
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.KeyHash[:16], cacheHumanBytes(e.SizeBytes),
					e.MTime[:min(len(e.MTime), 19)], be, strings.Join(ins, " "), strings.Join(opts, ","), status)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON object")
	cmd.Flags().BoolVar(&verify, "verify", false, "read every entry and check its checksum")
	return cmd
}

func newCacheClearCmd(dirFlag *string) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "clear",
		Short: "Remove every entry of the on-disk compile cache",
		Long: `Remove every entry of the on-disk compile cache, one file at a time (a process
reading an entry meanwhile still reads all of it; one compiling meanwhile
writes its entry afresh). Leftover temporary files older than a minute and
lock files nobody holds are removed too; other files are left alone. If some
files cannot be removed the command reports them and exits non-zero.

--json prints one object with these stable keys:
  dir                 the cache directory
  removed_entries     entry files removed
  removed_bytes       their total size
  removed_temp_files  temporary files removed
  removed_lock_files  lock files removed
  errors              files that could not be removed, as messages`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := cacheDir(*dirFlag)
			if err != nil {
				return err
			}
			if err := checkCacheDir(dir); err != nil {
				return err
			}
			res, err := cache.ClearDir(dir)
			if err != nil {
				return err
			}
			r := cacheClearReport{Dir: dir, RemovedEntries: res.Entries, RemovedBytes: res.Bytes,
				RemovedTempFiles: res.TempFiles, RemovedLockFiles: res.LockFiles, Errors: []string{}}
			for _, e := range res.Errors {
				r.Errors = append(r.Errors, e.Error())
			}
			w := cmd.OutOrStdout()
			if asJSON {
				if err := cacheWriteJSON(w, r); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(w, "removed %d entries (%s) from %s\n", r.RemovedEntries, cacheHumanBytes(r.RemovedBytes), r.Dir)
			}
			if len(r.Errors) > 0 {
				return fmt.Errorf("%d files could not be removed, first: %s", len(r.Errors), r.Errors[0])
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON object")
	return cmd
}

func init() {
	rootCmd.AddCommand(newCacheCmd())
}
