// Package iox holds small io helpers the file writers share.
package iox

import "io"

// CountWriter passes writes to W and counts the bytes written in N: the
// result of a WriteTo method that writes through layers (a bufio.Writer,
// an encoder) which do not report their totals.
type CountWriter struct {
	W io.Writer
	N int64
}

// Write writes p to W and adds what W wrote to N.
func (c *CountWriter) Write(p []byte) (int, error) {
	n, err := c.W.Write(p)
	c.N += int64(n)
	return n, err
}
