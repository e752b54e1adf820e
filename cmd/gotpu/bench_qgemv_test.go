package main

import (
	"runtime"
	"slices"
	"strings"
	"testing"
)

func TestBenchQGEMVTiny(t *testing.T) {
	cases := []struct {
		args  []string
		impls []string
	}{
		{[]string{"--dtype", "Q4_0", "--memmove-mb", "1", "--stream-mb", "0", "--levels", "generic"},
			[]string{"gotpu", "gotpu.r16", "gotpu.generic", "go-memmove", "go-memmove-matrix"}},
		{[]string{"--dtype", "Q4_K", "--k", "256", "--memmove-mb", "0", "--stream-mb", "1", "--levels", "generic"},
			[]string{"gotpu", "gotpu.r16", "gotpu.generic"}},
		{[]string{"--dtype", "Q5_1", "--memmove-mb", "0", "--stream-mb", "0", "--levels", "none", "--min-rep-s", "0.001"},
			[]string{"gotpu", "gotpu.r16"}},
		{[]string{"--dtype", "Q6_K", "--k", "256", "--memmove-mb", "0", "--stream-mb", "0", "--levels", "none", "--min-rep-s", "0.001"},
			[]string{"gotpu"}},
	}
	if runtime.GOOS == "linux" {
		cases = append(cases, struct {
			args  []string
			impls []string
		}{[]string{"--dtype", "Q8_0", "--memmove-mb", "1", "--stream-mb", "0", "--levels", "generic", "--clock", "cpu", "--threads", "1"},
			[]string{"gotpu", "gotpu.r16", "gotpu.generic", "go-memmove"}})
	}
	for _, tc := range cases {
		args := append([]string{"qgemv", "--size", "8", "--reps", "2", "--warmup", "0", "--ref", "none"}, tc.args...)
		if !slices.Contains(args, "--k") {
			args = append(args, "--k", "64")
		}
		rep := benchJSON(t, args...)
		if got := resultImpls(rep); !slices.Equal(got, tc.impls) {
			t.Errorf("%v: impls %v, want %v", tc.args, got, tc.impls)
		}
	}
}

func TestBenchQGEMVBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"qgemv", "--dtype", "Q4_K", "--k", "576", "--ref", "none"}, "multiple"},
		{[]string{"qgemv", "--dtype", "F32", "--ref", "none"}, "--dtype"},
		{[]string{"qgemv", "--clock", "sundial", "--ref", "none"}, "--clock"},
		{[]string{"qgemv", "--min-rep-s", "-1", "--ref", "none"}, "--min-rep-s"},
		{[]string{"qgemv", "--clock", "cpu", "--threads", "2", "--ref", "none"}, "--threads 1"},
	} {
		out, err := runBench(t, tc.args...)
		if err == nil {
			t.Errorf("%v: accepted\n%s", tc.args, out)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
			t.Errorf("%v: error %q, want one line mentioning %q", tc.args, msg, tc.want)
		}
	}
}
