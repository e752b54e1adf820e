package tensor

import (
	"runtime"
	"testing"
	"unsafe"

	"github.com/gotpu/gotpu/ir"
)

// TestPendIndex: a pending storage is found by its address only while
// the entry at that index is that very storage — held strongly, or weakly
// and still alive. An entry whose weakly held storage was collected does
// not answer for a new storage at the same address.
func TestPendIndex(t *testing.T) {
	dev := MustDevice("cpu")
	c := newLazyCtx(dev, backendOf(dev))
	val := c.g.Param(ir.Value{}.Meta)
	mk := func() *Storage {
		st := &Storage{dev: dev, be: c.be, nbytes: 4}
		st.lazy.Store(&lazyVal{ctx: c, v: val})
		return st
	}
	// Strong entries: the default Fused recording.
	a, b := mk(), mk()
	c.track(a)
	c.track(b)
	c.track(a) // a new value of a tracked storage updates its entry
	if len(c.pend) != 2 || c.pendIndex(a) != 0 || c.pendIndex(b) != 1 {
		t.Fatalf("strong: %d entries, indices %d %d, want 2 entries at 0 and 1", len(c.pend), c.pendIndex(a), c.pendIndex(b))
	}
	// A weak entry whose storage died: another storage given its address
	// (as the allocator may) is not that entry.
	prev := SetFuseGC(true)
	defer SetFuseGC(prev)
	func() {
		d := mk()
		c.track(d)
		if c.pend[2].st != nil {
			t.Fatal("with SetFuseGC(true) the entry holds the storage strongly")
		}
	}()
	for range 10 {
		runtime.GC()
		if c.pend[2].get() == nil {
			break
		}
	}
	if c.pend[2].get() != nil {
		t.Skip("the weakly held storage was not collected")
	}
	e := mk()
	c.pendSet[uintptr(unsafe.Pointer(e))] = 2 // as if e reused the address
	if k := c.pendIndex(e); k != -1 {
		t.Fatalf("a storage at a collected entry's address was found at %d", k)
	}
	c.track(e)
	if len(c.pend) != 4 || c.pendIndex(e) != 3 {
		t.Fatalf("the new storage got index %d of %d entries, want 3 of 4", c.pendIndex(e), len(c.pend))
	}
	runtime.KeepAlive(a)
	runtime.KeepAlive(b)
}
