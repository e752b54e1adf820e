package tensor

// SetForceDecompose makes composite ops ignore direct kernels (tests only).
func SetForceDecompose(on bool) bool { return forceDecompose.Swap(on) }

// BufferOf returns the device buffer under t's storage (tests only).
func BufferOf(t *Tensor) any { return t.st.buf }

// SetDonateBuffers switches buffer donation (tests only).
func SetDonateBuffers(on bool) bool {
	prev := donateBuffers
	donateBuffers = on
	return prev
}
