//go:build !unix

package cpu

func hostAlloc(n int) ([]byte, bool) { return AlignedBytes(n), false }

func hostFree([]byte) {}
