//go:build !(linux || darwin || freebsd || openbsd || netbsd || dragonfly)

package cache

// tryLockFile takes the per-key lock without blocking; on platforms without
// flock it is the portable exclusive-create lock.
func tryLockFile(path string) (unlockFunc, error) { return tryExclLock(path) }
