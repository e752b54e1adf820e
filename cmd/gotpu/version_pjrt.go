//go:build pjrt

package main

func init() { pjrtBuilt = true }
