//go:build unix && !linux

package cpu

// hostAlloc returns n zeroed, 64-byte-aligned bytes and whether they are
// mapped (and must be released with hostFree).
func hostAlloc(n int) ([]byte, bool) { return mapAlone(n) }

// hostFree releases a buffer hostAlloc mapped.
func hostFree(b []byte) { unmapAlone(b) }
