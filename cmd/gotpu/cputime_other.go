//go:build !unix

package main

// processCPUSeconds is unavailable here: -1.
func processCPUSeconds() float64 { return -1 }
