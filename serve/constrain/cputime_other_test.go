//go:build !unix

package constrain

func cpuNow() int64 { return 0 }
