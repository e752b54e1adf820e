package cache

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// tempPrefix starts the name of every temporary file the disk tier writes;
// `clear` removes leftovers of crashed writers by this prefix.
const tempPrefix = ".tmp-"

// writeFileAtomic writes parts, concatenated, to path so that readers see
// either the old file or the complete new one, never a partial write, and
// the new file survives a crash once it returns: a temporary file in the
// same directory, fsync, rename over path, fsync of the directory.
func writeFileAtomic(path string, parts ...[]byte) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, tempPrefix+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("cache: create temporary file in %s: %w", dir, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	for _, p := range parts {
		if _, err = f.Write(p); err != nil {
			return fmt.Errorf("cache: write %s: %w", tmp, err)
		}
	}
	// Entries are shared by every process of the host: readable by all.
	if err = f.Chmod(0o644); err != nil {
		return fmt.Errorf("cache: chmod %s: %w", tmp, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("cache: fsync %s: %w", tmp, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("cache: close %s: %w", tmp, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("cache: rename %s to %s: %w", tmp, path, err)
	}
	return syncDir(dir)
}

// mkdirSynced creates dir (and its parents) if needed, fsyncing the parent
// of each directory it creates so that the new entry in it is durable.
func mkdirSynced(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := mkdirSynced(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil
		}
		return fmt.Errorf("cache: create directory: %w", err)
	}
	return syncDir(parent)
}

// syncDir fsyncs a directory so that a rename or create in it is durable.
// Windows cannot fsync directories; there it is a no-op.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("cache: open directory %s for fsync: %w", dir, err)
	}
	serr := d.Sync()
	cerr := d.Close()
	if err := errors.Join(serr, cerr); err != nil {
		return fmt.Errorf("cache: fsync directory %s: %w", dir, err)
	}
	return nil
}
