//go:build !amd64

package tensor

import (
	"runtime"
	"strconv"
)

// goid identifies the calling goroutine by the id runtime.Stack prints.
func goid() uint64 {
	var buf [64]byte
	n := runtime.Stack(buf[:], false)
	// "goroutine 123 [running]: ..."
	b := buf[len("goroutine "):n]
	i := 0
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	id, _ := strconv.ParseUint(string(b[:i]), 10, 64)
	return id
}
