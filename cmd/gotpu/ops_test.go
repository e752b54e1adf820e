package main

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/gotpu/gotpu/op"
)

// runCmd executes "gotpu ARGS" in process and returns its output; flags are
// reset to their defaults first (cobra keeps values between Execute calls).
func runCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	rootCmd.SetOut(&out)
	rootCmd.SetErr(&out)
	defer func() { rootCmd.SetOut(nil); rootCmd.SetErr(nil) }()
	// Flags keep their values between Execute calls: put every flag of
	// the command back to its default first.
	if cmd, _, err := rootCmd.Find(args); err == nil {
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			if sv, ok := f.Value.(pflag.SliceValue); ok {
				sv.Replace(nil)
			} else {
				f.Value.Set(f.DefValue)
			}
			f.Changed = false
		})
	}
	rootCmd.SetArgs(args)
	err := rootCmd.Execute()
	return out.String(), err
}

func TestOpsJSONListsTheOpTable(t *testing.T) {
	for _, dev := range []string{"cpu", "meta"} {
		out, err := runCmd(t, "ops", "--json", "--device", dev)
		if err != nil {
			t.Fatal(err)
		}
		var rep []map[string]any
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("not a JSON array: %v", err)
		}
		var names []string
		for _, o := range rep {
			for _, k := range []string{"name", "kind", "group", "inputs", "attrs", "dtypes", "device", "direct_kernel_dtypes", "runs", "doc"} {
				if _, ok := o[k]; !ok {
					t.Fatalf("op entry lacks key %q: %v", k, o)
				}
			}
			names = append(names, o["name"].(string))
			if o["kind"] == "primitive" && !o["runs"].(bool) {
				t.Errorf("primitive %s has no kernel on %s", o["name"], dev)
			}
		}
		var want []string
		for _, d := range op.All() {
			want = append(want, d.Name)
		}
		if !slices.Equal(names, want) {
			t.Fatalf("ops --json lists %d ops, the table has %d", len(names), len(want))
		}
		if len(names) < 200 {
			t.Fatalf("only %d ops", len(names))
		}
	}
	if _, err := runCmd(t, "ops", "--device", "nonesuch"); err == nil || !strings.Contains(err.Error(), "nonesuch") {
		t.Fatalf("unknown device: %v", err)
	}
}

func TestInfoJSON(t *testing.T) {
	out, err := runCmd(t, "info", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"version", "go_version", "cpu_features", "mode", "devices", "environment"} {
		if _, ok := rep[k]; !ok {
			t.Errorf("info --json lacks %q", k)
		}
	}
	// The GEMM blocking: cache sizes and, per register-tiled kernel, its
	// tile and blocks (none on the pure-Go level).
	gemm, ok := rep["cpu_gemm_blocking"].(map[string]any)
	if !ok {
		t.Fatalf("info --json lacks cpu_gemm_blocking: %v", rep["cpu_gemm_blocking"])
	}
	for _, k := range []string{"l1d_bytes", "l2_bytes", "l3_bytes", "source", "kernels"} {
		if _, ok := gemm[k]; !ok {
			t.Errorf("cpu_gemm_blocking lacks %q", k)
		}
	}
	for _, kern := range gemm["kernels"].([]any) {
		for _, k := range []string{"level", "dtype", "mr", "nr", "kc", "mc", "nc", "active"} {
			if _, ok := kern.(map[string]any)[k]; !ok {
				t.Errorf("kernel %v lacks %q", kern, k)
			}
		}
	}
	devs := rep["devices"].([]any)
	if len(devs) < 2 {
		t.Fatalf("devices %v", devs)
	}
	// Every device has every documented key (meta has no features: []).
	for _, d := range devs {
		for _, k := range []string{"name", "description", "memory_bytes", "default_precision", "async", "features", "allocated_bytes", "reserved_bytes", "peak_allocated_bytes"} {
			if _, ok := d.(map[string]any)[k]; !ok {
				t.Errorf("device %v lacks %q", d, k)
			}
		}
	}
}
