//go:build !amd64 || purego

package quant

// addLevel installs a level's own kernels into k and reports whether it
// has any.
func addLevel(k *Kernels, level string) bool { return false }
