//go:build !unix

package main

// cpuSeconds is not available on this platform.
func cpuSeconds() float64 { return -1 }
