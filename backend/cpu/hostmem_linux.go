//go:build linux

package cpu

import (
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Buffers of hugeMin bytes and more are carved, page-aligned and one after
// another, from regions of at least hugeRegionSize bytes that start on a
// 2 MiB boundary and are advised MADV_HUGEPAGE, so that the kernel backs
// them with transparent huge pages (where it runs THP in "always" or
// "madvise" mode). A model's weights are mostly 0.2-2 MB matrices: each
// mapped on its own they sat on 4 KiB pages, and a decode step streaming
// 270 MB of them through 4 KiB pages walked page tables all the way (a
// BF16 SmolLM2 decode's products: 10.5-11.7 ms a token on 4 KiB pages,
// 8.5-9.8 on huge pages, five interleaved step-timer rounds). Packing them
// into shared regions keeps the memory what the buffers need: a huge page
// per buffer would double it. A region is unmapped when its last buffer is
// freed and it no longer takes new ones; its memory is never reused (so
// every buffer starts zeroed, as mmap's do), and a buffer freed from a
// region that stays gives its pages back (MADV_DONTNEED), so that freeing
// returns memory as unmapping did. GOTPU_HUGEPAGES=0 maps every buffer on
// its own as before.
const (
	hugeMin        = 256 << 10
	hugePage       = 2 << 20
	hugeRegionSize = 32 << 20
)

// hugeOn is false under GOTPU_HUGEPAGES=0.
var hugeOn = os.Getenv("GOTPU_HUGEPAGES") != "0"

// hugeBuf is where a carved buffer is: its region, and its offset and
// page-rounded size in it.
type hugeBuf struct {
	r         *hugeRegion
	off, size int
}

// hugeRegion is one mapping that buffers are carved from.
type hugeRegion struct {
	mapping []byte // as mmap returned it (unmapped whole)
	mem     []byte // its 2 MiB-aligned part, carved from the start
	used    int    // bytes carved
	live    int    // buffers not yet freed
}

var huge struct {
	sync.Mutex
	cur   *hugeRegion                   // the region new buffers come from
	owner map[*byte]hugeBuf             // a live buffer's first byte -> where it is
	stats struct{ regions, mapped int } // regions mapped now, and their bytes
}

// hostAlloc returns n zeroed, 64-byte-aligned bytes and whether they are
// mapped (and must be released with hostFree).
func hostAlloc(n int) ([]byte, bool) {
	if hugeOn && n >= hugeMin {
		if b := hugeAlloc(n); b != nil {
			return b, true
		}
	}
	return mapAlone(n)
}

// hugeAlloc carves n bytes from the current region, or from a new one
// when they do not fit; nil when mapping fails.
func hugeAlloc(n int) []byte {
	size := roundUp(n, 4096)
	huge.Lock()
	defer huge.Unlock()
	r := huge.cur
	if r == nil || r.used+size > len(r.mem) {
		rs := max(hugeRegionSize, roundUp(size, hugePage))
		m, err := unix.Mmap(-1, 0, rs+hugePage, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
		if err != nil {
			return nil
		}
		off := int((hugePage - uintptr(unsafe.Pointer(&m[0]))%hugePage) % hugePage)
		mem := m[off : off+rs : off+rs]
		_ = unix.Madvise(mem, unix.MADV_HUGEPAGE) // advice: without THP the pages stay small
		if r != nil && r.live == 0 {
			hugeUnmap(r)
		}
		r = &hugeRegion{mapping: m, mem: mem}
		huge.cur = r
		huge.stats.regions++
		huge.stats.mapped += len(m)
		if huge.owner == nil {
			huge.owner = map[*byte]hugeBuf{}
		}
	}
	b := r.mem[r.used : r.used+n : r.used+n]
	huge.owner[&b[0]] = hugeBuf{r, r.used, size}
	r.used += size
	r.live++
	return b
}

// hugeUnmap unmaps region r (huge held).
func hugeUnmap(r *hugeRegion) {
	_ = unix.Munmap(r.mapping)
	huge.stats.regions--
	huge.stats.mapped -= len(r.mapping)
}

// hostFree releases a buffer hostAlloc mapped.
func hostFree(b []byte) {
	if len(b) == 0 {
		return
	}
	huge.Lock()
	if hb, ok := huge.owner[&b[0]]; ok {
		delete(huge.owner, &b[0])
		r := hb.r
		r.live--
		if r.live == 0 && r != huge.cur {
			hugeUnmap(r)
		} else {
			_ = unix.Madvise(r.mem[hb.off:hb.off+hb.size], unix.MADV_DONTNEED)
		}
		huge.Unlock()
		return
	}
	huge.Unlock()
	unmapAlone(b)
}

// hugeRegions reports how many huge-page regions are mapped and their
// bytes (for the tests).
func hugeRegions() (regions, bytes int) {
	huge.Lock()
	defer huge.Unlock()
	return huge.stats.regions, huge.stats.mapped
}
