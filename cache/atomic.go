package cache

import (
	"fmt"

	"github.com/gotpu/gotpu/internal/atomicfile"
)

// tempPrefix starts the name of every temporary file the disk tier writes
// (atomicfile.TempPrefix); `clear` removes leftovers of crashed writers by
// this prefix.
const tempPrefix = atomicfile.TempPrefix

// writeFileAtomic writes parts, concatenated, to path so that readers see
// either the old file or the complete new one, never a partial write, and
// the new file survives a crash once it returns (atomicfile.WriteBytes).
// Entries are shared by every process of the host: readable by all.
func writeFileAtomic(path string, parts ...[]byte) error {
	if err := atomicfile.WriteBytes(path, 0o644, parts...); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	return nil
}

// mkdirSynced creates dir (and its parents) if needed, fsyncing the parent
// of each directory it creates so that the new entry in it is durable.
func mkdirSynced(dir string) error {
	if err := atomicfile.MkdirAll(dir); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	return nil
}

// syncDir fsyncs a directory so that a rename or create in it is durable.
func syncDir(dir string) error {
	if err := atomicfile.SyncDir(dir); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	return nil
}
