//go:build !amd64 || purego

package cpulevel

// Has reports whether a level's kernels run here: without the amd64
// assembly only the generic ones do.
func Has(level string) bool { return level == Generic }

// AMD reports whether the CPU is AMD's; without the amd64 assembly gotpu
// does not ask.
func AMD() bool { return false }
