package main

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/gotpu/gotpu"
	"github.com/gotpu/gotpu/backend/cpu"
)

func TestVersion(t *testing.T) {
	line := "gotpu " + gotpu.Version + " (" + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH +
		", CPU kernel level " + cpu.CPULevel()
	for _, tc := range []struct {
		args []string
		json bool
	}{
		{args: []string{"version"}},
		{args: []string{"--version"}},
		{args: []string{"version", "--json"}, json: true},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, err := runCmd(t, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.json {
				if !strings.HasPrefix(out, line) || strings.Count(out, "\n") != 1 {
					t.Fatalf("got %q, want one line starting %q", out, line)
				}
				return
			}
			var rep map[string]any
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			want := map[string]any{"version": gotpu.Version, "go_version": runtime.Version(), "os": runtime.GOOS,
				"arch": runtime.GOARCH, "cpu_kernel_level": cpu.CPULevel(), "pjrt": pjrtBuild}
			for k, v := range want {
				if rep[k] != v {
					t.Errorf("%s = %v, want %v", k, rep[k], v)
				}
			}
			for _, k := range []string{"revision", "modified"} {
				if _, ok := rep[k]; !ok {
					t.Errorf("key %q missing", k)
				}
			}
			if len(rep) != 8 {
				t.Errorf("%d keys, want the 8 documented ones: %v", len(rep), rep)
			}
		})
	}
}
