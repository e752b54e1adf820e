package tensor

import "fmt"

// ReleaseStorage frees the device buffer under t's storage now but keeps
// the storage object, so that every tensor viewing it (a module's field,
// the inputs autograd saved for backward) stays the same tensor with the
// same shape, only without memory: torch's
// t.untyped_storage().resize_(0), which FSDP uses to drop a parameter's
// full value between uses. Until RestoreStorage gives the storage a buffer
// again, an op reading it panics as a use of freed storage. Work already
// queued on the device finishes first. It does nothing for a Go scalar or
// a storage already released or freed.
func (t *Tensor) ReleaseStorage() {
	if t.st == nil || t.st.freed.Load() {
		return
	}
	t.ready("release_storage")
	if err := t.st.be.Sync(t.st.dev.Index); err != nil {
		panic(&Error{Op: "release_storage", Msg: err.Error(), Err: err})
	}
	t.st.free()
}

// StorageReleased reports whether t's storage has no buffer (after
// ReleaseStorage or Free).
func (t *Tensor) StorageReleased() bool { return t.st != nil && t.st.freed.Load() }

// RestoreStorage gives a storage released by ReleaseStorage (or freed by
// Free) a new buffer of its former size (torch's resize_ back to the full
// size), without changing its version counter; the contents are undefined
// until the caller writes them (under PreserveVersion when autograd saved
// the tensor, so that backward still accepts it). It does nothing when the
// storage has its buffer.
func (t *Tensor) RestoreStorage() {
	st := t.st
	if st == nil || !st.freed.Load() {
		return
	}
	buf, err := st.be.Alloc(st.dev.Index, st.nbytes)
	if err != nil {
		panic(&Error{Op: "restore_storage", Msg: fmt.Sprintf("cannot allocate %d bytes on %s: %v", st.nbytes, st.dev, err), Err: err})
	}
	st.buf = buf
	st.setHandle(&freeHandle{be: st.be, index: st.dev.Index, buf: buf})
	st.freed.Store(false)
}

// PreserveVersion runs f and then puts t's storage version counter back to
// its value before f (torch.autograd._unsafe_preserve_version_counter):
// writes f makes into t are invisible to autograd's check that a saved
// tensor was not modified. It is for refilling a storage with the value it
// had when autograd saved it (FSDP's gather before backward); anything
// else makes backward silently wrong.
func PreserveVersion(t *Tensor, f func()) {
	if t.st == nil {
		f()
		return
	}
	v := t.st.version.Load()
	defer t.st.version.Store(v)
	f()
}
