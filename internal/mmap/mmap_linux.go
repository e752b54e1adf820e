//go:build linux

package mmap

import (
	"errors"
	"math"
	"os"

	"golang.org/x/sys/unix"
)

// File maps the whole file read-only and returns the mapping and the
// function that releases it. Mapping reserves address space only; pages
// are read from disk when first touched.
func File(f *os.File, size int64) ([]byte, func() error, error) {
	if size <= 0 || size > math.MaxInt {
		return nil, nil, errors.New("size not mappable")
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return data, func() error { return unix.Munmap(data) }, nil
}
