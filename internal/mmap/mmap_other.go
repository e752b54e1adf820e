//go:build !linux

package mmap

import (
	"errors"
	"os"
)

// File is not implemented on this OS: it always fails, and callers fall
// back to ReadAt.
func File(f *os.File, size int64) ([]byte, func() error, error) {
	return nil, nil, errors.New("memory mapping not implemented on this OS")
}

// Release does nothing where File maps nothing.
func Release([]byte) {}
