//go:build unix

package cpu

import "golang.org/x/sys/unix"

// mmapThreshold is the size from which buffers are mapped outside the Go
// heap. Keeping tensor data off the heap lets the garbage collector run at
// the pace of the small objects (tensors, nodes) whose cleanups return
// buffers to the cache: with tensor data on the heap, cached blocks count
// as live and the collector's target grows with the cache.
const mmapThreshold = 64 << 10

// mapAlone returns n zeroed, 64-byte-aligned bytes, in a mapping of their
// own from mmapThreshold bytes up, and whether they are mapped (and must
// be released with unmapAlone).
func mapAlone(n int) ([]byte, bool) {
	if n >= mmapThreshold {
		b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
		if err == nil {
			return b, true
		}
	}
	return AlignedBytes(n), false
}

// unmapAlone releases a buffer mapAlone mapped.
func unmapAlone(b []byte) { _ = unix.Munmap(b) }
