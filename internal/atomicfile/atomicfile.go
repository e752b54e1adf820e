// Package atomicfile is gotpu's one way to write a file atomically and
// durably: readers see either the old file or the complete new one, never a
// partial write, and the new file survives a crash once Write returns. The
// compile cache's disk tier, the safetensors writer and `gotpu quantize`
// use it.
package atomicfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"

	"github.com/gotpu/gotpu/internal/iox"
)

// TempPrefix starts the name of every temporary file Write creates (in the
// target's directory); a crashed writer leaves such a file behind, and
// cleaners (`gotpu cache clear`) remove leftovers by this prefix.
const TempPrefix = ".tmp-"

// Write writes path through a temporary file in the same directory: fill
// writes the content (through a buffer), then the file gets mode perm, is
// fsynced, renamed over path, and the directory is fsynced. It returns the
// number of bytes written. On failure the temporary file is removed and
// path is untouched; fill's error is returned unwrapped.
func Write(path string, perm os.FileMode, fill func(w io.Writer) error) (n int64, err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, TempPrefix+filepath.Base(path)+"-*")
	if err != nil {
		return 0, fmt.Errorf("create temporary file in %s: %w", dir, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	cw := &iox.CountWriter{W: f}
	bw := bufio.NewWriterSize(cw, 1<<20)
	if err = fill(bw); err != nil {
		return 0, err
	}
	if err = bw.Flush(); err != nil {
		return 0, fmt.Errorf("write %s: %w", tmp, err)
	}
	if err = f.Chmod(perm); err != nil {
		return 0, fmt.Errorf("chmod %s: %w", tmp, err)
	}
	if err = f.Sync(); err != nil {
		return 0, fmt.Errorf("fsync %s: %w", tmp, err)
	}
	if err = f.Close(); err != nil {
		return 0, fmt.Errorf("close %s: %w", tmp, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return 0, fmt.Errorf("rename %s to %s: %w", tmp, path, err)
	}
	return cw.N, SyncDir(dir)
}

// WriteBytes is Write with content given as parts, concatenated.
func WriteBytes(path string, perm os.FileMode, parts ...[]byte) error {
	_, err := Write(path, perm, func(w io.Writer) error {
		for _, p := range parts {
			if _, err := w.Write(p); err != nil {
				return fmt.Errorf("write %s: %w", path, err)
			}
		}
		return nil
	})
	return err
}

// MkdirAll creates dir and its missing parents, fsyncing the parent of each
// directory it creates so that the new entry is durable.
func MkdirAll(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := MkdirAll(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil
		}
		return fmt.Errorf("create directory: %w", err)
	}
	return SyncDir(parent)
}

// SyncDir fsyncs a directory so that a rename, create or remove in it is
// durable. Windows cannot fsync directories; there it is a no-op.
func SyncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open directory %s for fsync: %w", dir, err)
	}
	serr := d.Sync()
	cerr := d.Close()
	if err := errors.Join(serr, cerr); err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}
