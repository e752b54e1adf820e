package models

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
)

func TestVerify(t *testing.T) {
	dir := filepath.Join(refDir, "qwen3")
	load := func(d device.Device, dt dtype.DType) (*Model, error) { return Load(dir, Options{Device: d, DType: dt}) }
	res, err := Verify(context.Background(), load, []int{3, 14, 15, 92, 65, 35, 89, 79}, VerifyConfigs([]device.Device{{Type: "cpu"}}))
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 12 {
		t.Fatalf("%d results, want 12", len(res))
	}
	for _, r := range res {
		t.Logf("%+v", r)
		if r.Error != "" {
			t.Errorf("%s %s %s: %s", r.Mode, r.DType, r.Precision, r.Error)
		}
		// f32 at full precision is within f32 tolerance of f64 on a tiny
		// model; every configuration is within its own.
		if !r.Within {
			t.Errorf("%s %s %s: max abs %g rel %g outside atol %g rtol %g", r.Mode, r.DType, r.Precision, r.MaxAbs, r.MaxRel, r.ATol, r.RTol)
		}
	}
	// A broken configuration is reported, not fatal.
	bad, err := Verify(context.Background(), load, []int{1, 2}, []VerifyConfig{{Device: device.Device{Type: "cpu"}, Mode: "warp", DType: dtype.F32}})
	if err != nil || len(bad) != 1 || bad[0].Error == "" {
		t.Errorf("unknown mode: %v %+v", err, bad)
	}
}
