//go:build linux

package cpu

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestHugeRegions: buffers from hugeMin up are carved from shared 2 MiB
// aligned regions — page-aligned, zeroed, not overlapping, a buffer
// larger than a region in one of its own — and a region is unmapped once
// its buffers are freed and it takes no new ones.
func TestHugeRegions(t *testing.T) {
	if !hugeOn {
		t.Skip("GOTPU_HUGEPAGES=0")
	}
	r0, _ := hugeRegions()
	const n = 1<<20 + 100
	count := 2*hugeRegionSize/(n+4096) + 5 // more than two regions' worth
	var bufs [][]byte
	for i := 0; i < count; i++ {
		b, mapped := hostAlloc(n)
		if !mapped || len(b) != n {
			t.Fatalf("buffer %d: mapped %v, %d bytes", i, mapped, len(b))
		}
		if p := uintptr(unsafe.Pointer(&b[0])); p%4096 != 0 {
			t.Fatalf("buffer %d at %#x: not page-aligned", i, p)
		}
		for j, v := range b {
			if v != 0 {
				t.Fatalf("buffer %d: byte %d is %d, not zero", i, j, v)
			}
		}
		for j := range b {
			b[j] = byte(i + 1)
		}
		bufs = append(bufs, b)
	}
	for i, b := range bufs {
		for j, v := range b {
			if v != byte(i+1) {
				t.Fatalf("buffer %d: byte %d is %d, another buffer's (overlap)", i, j, v)
			}
		}
	}
	r1, _ := hugeRegions()
	if r1-r0 < 2 {
		t.Errorf("%d buffers of %d bytes took %d new regions, want at least 2", count, n, r1-r0)
	}
	if b := hugeSmaps(); b >= 0 {
		t.Logf("AnonHugePages: %d kB (the kernel's THP mode decides)", b)
	}
	// A buffer freed while its region stays gives its pages back; its
	// neighbour keeps them.
	last := len(bufs) - 1
	hostFree(bufs[last-1])
	if got := resident(t, bufs[last-1]); got != 0 {
		t.Errorf("a freed buffer still has %d resident pages", got)
	}
	if got, want := resident(t, bufs[last]), (n+4095)/4096; got != want {
		t.Errorf("its neighbour has %d of %d pages resident", got, want)
	}
	for i, b := range bufs {
		if i != last-1 {
			hostFree(b)
		}
	}
	if r2, _ := hugeRegions(); r2 > r0+1 {
		t.Errorf("after freeing every buffer %d regions are mapped, want at most %d (the current one)", r2, r0+1)
	}
	big, _ := hostAlloc(hugeRegionSize + 3<<20)
	if len(big) != hugeRegionSize+3<<20 || uintptr(unsafe.Pointer(&big[0]))%4096 != 0 {
		t.Fatalf("a buffer larger than a region: %d bytes at %p", len(big), &big[0])
	}
	big[len(big)-1] = 1
	hostFree(big)
	small, mapped := hostAlloc(hugeMin - 1) // below hugeMin: a mapping of its own
	if !mapped {
		t.Fatalf("a %d-byte buffer is not mapped", hugeMin-1)
	}
	huge.Lock()
	_, carved := huge.owner[&small[0]]
	huge.Unlock()
	if carved {
		t.Errorf("a buffer below hugeMin was carved from a region")
	}
	hostFree(small)
}

// TestHugeConcurrent allocates and frees from several goroutines (run
// under -race by .ci/run).
func TestHugeConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 40; i++ {
				b, _ := hostAlloc(hugeMin + (g*40+i)*4096)
				b[0], b[len(b)-1] = byte(g), byte(i)
				if b[0] != byte(g) || b[len(b)-1] != byte(i) {
					t.Errorf("goroutine %d buffer %d overwritten", g, i)
				}
				hostFree(b)
			}
		}(g)
	}
	wg.Wait()
}

// resident counts the pages of b, a page-aligned buffer, that are in
// memory (mincore).
func resident(t *testing.T, b []byte) int {
	t.Helper()
	vec := make([]byte, (len(b)+4095)/4096)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatalf("mincore: %v", e)
	}
	c := 0
	for _, v := range vec {
		c += int(v & 1)
	}
	return c
}

// hugeSmaps returns this process's AnonHugePages in kB, or -1.
func hugeSmaps() int {
	data, err := os.ReadFile("/proc/self/smaps_rollup")
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "AnonHugePages:" {
			if kb, err := strconv.Atoi(f[1]); err == nil {
				return kb
			}
		}
	}
	return -1
}
