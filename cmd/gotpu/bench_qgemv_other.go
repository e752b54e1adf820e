//go:build !linux

package main

// threadCPUSeconds returns -1: only Linux reports a thread's CPU time here.
func threadCPUSeconds() float64 { return -1 }
