//go:build !linux

package gguf

import (
	"errors"
	"os"
)

// mmapFile is not implemented on this OS; File falls back to ReadAt.
func mmapFile(f *os.File, size int64) ([]byte, func() error, error) {
	return nil, nil, errors.New("memory mapping not implemented on this OS")
}
