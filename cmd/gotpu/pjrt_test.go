//go:build pjrt

package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/gotpu/gotpu/backend/pjrt"
)

func TestPJRTCommand(t *testing.T) {
	out, err := runCmd(t, "pjrt", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, k := range []string{"plugins", "unsupported_ops", "cache_dir"} {
		if _, ok := rep[k]; !ok {
			t.Errorf("key %q missing", k)
		}
	}
	names := map[string]map[string]any{}
	for _, p := range rep["plugins"].([]any) {
		m := p.(map[string]any)
		names[m["name"].(string)] = m
		for _, k := range []string{"name", "loaded", "devices"} {
			if _, ok := m[k]; !ok {
				t.Errorf("plugin key %q missing in %v", k, m)
			}
		}
	}
	for _, n := range []string{"xla", "tpu", "cuda"} {
		if names[n] == nil {
			t.Errorf("plugin %s not listed", n)
		}
	}
	// Every primitive runs on the backend (the optimizer steps through
	// their functional lowering), so the list is empty.
	if u, ok := rep["unsupported_ops"].([]any); !ok || len(u) != len(pjrt.UnsupportedNames()) {
		t.Errorf("unsupported_ops %v, want the %d ops of pjrt.UnsupportedNames", rep["unsupported_ops"], len(pjrt.UnsupportedNames()))
	}
	if strings.Contains(out, "adam_step") || strings.Contains(out, "sgd_step") {
		t.Errorf("unsupported ops list an optimizer step:\n%s", out)
	}
	if err := pjrt.Open("xla"); err == nil {
		if names["xla"]["loaded"] != true {
			t.Errorf("xla loaded but reported %v", names["xla"])
		}
		// gotpu info and gotpu ops see the xla device.
		info, err := runCmd(t, "info")
		if err != nil || !strings.Contains(info, "xla") {
			t.Errorf("gotpu info does not list xla (%v):\n%s", err, info)
		}
		ops, err := runCmd(t, "ops", "--device", "xla", "--json")
		if err != nil || !strings.Contains(ops, `"device": "xla"`) {
			t.Errorf("gotpu ops --device xla: %v", err)
		}
	} else if os.Getenv("GOTPU_PJRT_REQUIRE") == "1" {
		t.Fatalf("xla: %v", err)
	}
	// A plugin that must load and cannot is a one-line error.
	t.Setenv("GOTPU_PJRT_PLUGIN", "nosuchdev=/nonexistent/plugin.so")
	if _, err := runCmd(t, "pjrt", "--open", "nosuchdev"); err == nil || strings.Contains(err.Error(), "\n") {
		t.Errorf("--open of a missing plugin: %v", err)
	}
}
