package iox

import (
	"errors"
	"strings"
	"testing"
)

// shortWriter writes at most max bytes a call and then fails.
type shortWriter struct{ max int }

func (s shortWriter) Write(p []byte) (int, error) {
	if len(p) > s.max {
		return s.max, errors.New("short write")
	}
	return len(p), nil
}

func TestCountWriter(t *testing.T) {
	var sb strings.Builder
	c := &CountWriter{W: &sb}
	for _, s := range []string{"abc", "", "de"} {
		if n, err := c.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if c.N != 5 || sb.String() != "abcde" {
		t.Errorf("N %d, wrote %q", c.N, sb.String())
	}
	// A short write counts what the writer took.
	c = &CountWriter{W: shortWriter{max: 2}}
	if n, err := c.Write([]byte("hello")); n != 2 || err == nil || c.N != 2 {
		t.Errorf("short write: n %d err %v N %d", n, err, c.N)
	}
}
