//go:build linux

package mmap

import (
	"errors"
	"math"
	"os"
	"unsafe"

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

// Release tells the kernel that the mapped bytes b (a part of a mapping
// File returned) are not needed for now: the whole pages inside b leave the
// process's resident memory. The mapping stays valid; a later read faults
// the pages back in from the file. A loader calls it after copying a
// tensor out, so that a model's load does not hold the file and the copy
// at once.
func Release(b []byte) {
	if len(b) == 0 {
		return
	}
	page := uintptr(os.Getpagesize())
	start := uintptr(unsafe.Pointer(&b[0]))
	lo := (start + page - 1) &^ (page - 1)
	hi := (start + uintptr(len(b))) &^ (page - 1)
	if hi <= lo {
		return
	}
	_ = unix.Madvise(b[lo-start:hi-start], unix.MADV_DONTNEED)
}
