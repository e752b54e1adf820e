package tensor

import (
	"runtime"
	"testing"
	"time"
)

// TestAttachReleases: a storage given new buffers again and again (a
// gradient or a weight a program rewrites every step) frees each old
// buffer when the new one arrives, keeps one GC cleanup for its lifetime
// (not one per buffer), and that cleanup frees the last buffer.
func TestAttachReleases(t *testing.T) {
	dev := MustDevice("cpu")
	be := backendOf(dev)
	const n = 1 << 20
	settle := func() int64 {
		var a int64
		for range 20 {
			runtime.GC()
			time.Sleep(2 * time.Millisecond)
			if b := be.MemStats(dev.Index).Allocated; b == a {
				break
			} else {
				a = b
			}
		}
		return a
	}
	base := settle()
	func() {
		st := newStorage(dev, be, n)
		box := st.box
		for i := range 50 {
			buf, err := be.Alloc(dev.Index, n)
			if err != nil {
				t.Fatal(err)
			}
			st.attach(buf)
			if st.box != box {
				t.Fatalf("attach %d made a new cleanup box", i)
			}
			if got := be.MemStats(dev.Index).Allocated - base; got > 2*n {
				t.Fatalf("after %d attaches %d bytes allocated: old buffers are not freed", i+1, got)
			}
		}
		runtime.KeepAlive(st)
	}()
	if got := settle() - base; got != 0 {
		t.Fatalf("%d bytes still allocated after the storage died", got)
	}
}
