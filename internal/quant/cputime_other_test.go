//go:build !unix

package quant

func processCPU() float64 { return -1 }
