package main

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func TestParseSizes(t *testing.T) {
	tests := []struct {
		in   string
		want []int
		err  string
	}{
		{"1KB,16MB,1024", []int{1024, 16 << 20, 1024}, ""},
		{"2k, 1M ,1G", []int{2048, 1 << 20, 1 << 30}, ""},
		{"64B,10", []int{64, 8}, ""},
		{"x", nil, "bad size"},
		{"2", nil, "bad size"},
	}
	for _, tc := range tests {
		got, err := parseSizes(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseSizes(%q) err = %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("parseSizes(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestBusBWAndIters(t *testing.T) {
	tests := []struct {
		size  int
		us    float64
		n     int
		bw    float64
		iters int
	}{
		{1 << 20, 1000, 2, float64(1<<20) / 1e-3 / 1e9, 256},
		{1 << 20, 1000, 4, float64(1<<20) / 1e-3 * 1.5 / 1e9, 256},
		{1024, 10, 2, 1024 / 10e-6 / 1e9, 1000},
		{256 << 20, 1e5, 2, float64(256<<20) / 0.1 / 1e9, 5},
	}
	for _, tc := range tests {
		if got := busBW(tc.size, tc.us, tc.n); math.Abs(got-tc.bw) > 1e-9*tc.bw {
			t.Errorf("busBW(%d, %v, %d) = %v, want %v", tc.size, tc.us, tc.n, got, tc.bw)
		}
		if got := allreduceIters(tc.size); got != tc.iters {
			t.Errorf("allreduceIters(%d) = %d, want %d", tc.size, got, tc.iters)
		}
	}
}
