//go:build pjrt

package pjrt_test

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gotpu/gotpu/backend/pjrt"
	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// xla returns the xla backend, skipping when the CPU plugin is absent
// (tools/pjrt/fetch.sh installs it; ci.sh sets GOTPU_PJRT_REQUIRE=1 to make
// that a failure).
func xla(t testing.TB) *pjrt.Backend {
	t.Helper()
	if err := pjrt.Open("xla"); err != nil {
		if os.Getenv("GOTPU_PJRT_REQUIRE") == "1" {
			t.Fatalf("xla plugin: %v", err)
		}
		t.Skipf("xla plugin not available: %v", err)
	}
	be, err := device.Lookup("xla")
	if err != nil {
		t.Fatal(err)
	}
	return be.(*pjrt.Backend)
}

func f32bytes(v ...float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		dtype.PutFloat64(dtype.F32, b, i, float64(x))
	}
	return b
}

func f32s(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = float32(dtype.Float64At(dtype.F32, b, i))
	}
	return out
}

func TestXLAMissingPluginIsAClearError(t *testing.T) {
	dir := t.TempDir()
	bogus := filepath.Join(dir, "not_a_plugin.so")
	if err := os.WriteFile(bogus, []byte("not an ELF file"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, env string
		want      error
		wantText  string
	}{
		{"absent file", "nosuch=" + filepath.Join(dir, "absent.so"), pjrt.ErrPluginLoad, "absent.so"},
		{"not a plugin", "bogus=" + bogus, pjrt.ErrPluginLoad, "not_a_plugin.so"},
		{"unknown name", "", pjrt.ErrUnknownPlugin, "GOTPU_PJRT_PLUGIN"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOTPU_PJRT_PLUGIN", tc.env)
			name := "nosuch"
			if strings.HasPrefix(tc.env, "bogus=") {
				name = "bogus"
			}
			err := pjrt.Open(name)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Open(%s) = %v, want %v", name, err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.wantText) {
				t.Errorf("error %q does not mention %q", err, tc.wantText)
			}
			if _, err := device.Lookup(name); err == nil {
				t.Errorf("%s registered after a failed Open", name)
			}
		})
	}
	t.Run("missing with install hint", func(t *testing.T) {
		t.Setenv("GOTPU_PJRT_PLUGIN", "")
		t.Setenv("GOTPU_PJRT_CACHE", dir)
		t.Setenv("HOME", dir)
		t.Setenv("PYTHONPATH", "")
		t.Setenv("VIRTUAL_ENV", "")
		t.Setenv("LD_LIBRARY_PATH", dir)
		// cuda: no plugin on this machine's python paths nor library path.
		err := pjrt.Open("cuda")
		if err == nil {
			t.Skip("a cuda plugin is installed")
		}
		if !errors.Is(err, pjrt.ErrPluginNotFound) && !errors.Is(err, pjrt.ErrNoDevices) {
			t.Fatalf("Open(cuda) = %v, want ErrPluginNotFound", err)
		}
		if errors.Is(err, pjrt.ErrPluginNotFound) && !strings.Contains(err.Error(), "pip install") {
			t.Errorf("error %q does not say what to install", err)
		}
	})
}

func TestXLADevicesAndBuffers(t *testing.T) {
	be := xla(t)
	if be.NumDevices() < 1 {
		t.Fatalf("no devices")
	}
	p := be.Plugin()
	// XLA's CPU plugin in CI; the CUDA plugin (GOTPU_PJRT_PLUGIN=xla=...)
	// when checked on a GPU.
	if (p.Platform != "cpu" && p.Platform != "cuda") || p.APIMajor != 0 {
		t.Errorf("platform %q api %d.%d", p.Platform, p.APIMajor, p.APIMinor)
	}
	if p.Platform == "cpu" && !strings.Contains(be.Properties(0).Name, "cpu") {
		t.Errorf("properties name %q", be.Properties(0).Name)
	}
	before := be.MemStats(0)
	buf, err := be.Alloc(0, 16)
	if err != nil {
		t.Fatal(err)
	}
	if got := be.MemStats(0).Allocated - before.Allocated; got != 16 {
		t.Errorf("allocated grew by %d, want 16", got)
	}
	got := make([]byte, 16)
	if err := be.Read(0, buf, 0, got); err != nil || !slices.Equal(got, make([]byte, 16)) {
		t.Fatalf("fresh buffer read %v %v, want zeros", got, err)
	}
	if err := be.Write(0, buf, 0, f32bytes(1, 2, 3, 4)); err != nil {
		t.Fatal(err)
	}
	if err := be.Write(0, buf, 4, f32bytes(20)); err != nil {
		t.Fatal(err)
	}
	if err := be.Read(0, buf, 0, got); err != nil {
		t.Fatal(err)
	}
	if w := []float32{1, 20, 3, 4}; !slices.Equal(f32s(got), w) {
		t.Errorf("read %v, want %v", f32s(got), w)
	}
	if err := be.Write(0, buf, 12, f32bytes(1, 2)); err == nil {
		t.Errorf("write past the end succeeded")
	}
	if _, err := be.Alloc(be.NumDevices(), 4); !errors.Is(err, device.ErrNoDevice) {
		t.Errorf("alloc on a missing device: %v", err)
	}
	be.Free(0, buf)
	if err := be.Read(0, buf, 0, got); !errors.Is(err, pjrt.ErrFreed) {
		t.Errorf("read after free: %v", err)
	}
	if got := be.MemStats(0).Allocated - before.Allocated; got != 0 {
		t.Errorf("allocated after free %d, want 0", got)
	}
}

func operand(t *testing.T, be *pjrt.Backend, dt dtype.DType, shape []int, raw []byte) device.Operand {
	t.Helper()
	buf, err := be.Alloc(0, len(raw))
	if err != nil {
		t.Fatal(err)
	}
	if err := be.Write(0, buf, 0, raw); err != nil {
		t.Fatal(err)
	}
	return device.Operand{Buf: buf, DType: dt, Layout: op.Contiguous(shape)}
}

func readF32(t *testing.T, be *pjrt.Backend, o device.Operand) []float32 {
	t.Helper()
	b := make([]byte, o.Buf.Size())
	if err := be.Read(0, o.Buf, 0, b); err != nil {
		t.Fatal(err)
	}
	return f32s(b)
}

func TestXLALaunch(t *testing.T) {
	be := xla(t)
	add, _ := op.Lookup("add")
	x := operand(t, be, dtype.F32, []int{2, 3}, f32bytes(1, 2, 3, 4, 5, 6))
	y := operand(t, be, dtype.F32, []int{3}, f32bytes(10, 20, 30))
	yb := y
	bl, _ := y.Layout.BroadcastTo([]int{2, 3})
	yb.Layout = bl
	// A transposed view of x: shape [3,2], strides [1,3].
	xt := x
	xt.Layout = op.Layout{Shape: []int{3, 2}, Strides: []int{1, 3}}
	// x[:, ::2] of the [2,3] buffer [1..6]: elements 0,2 and 3,5.
	xs := x
	xs.Layout = op.Layout{Shape: []int{2, 2}, Strides: []int{3, 2}}
	// Elements 1..4 as [2,2]: contiguous with an offset.
	xo := x
	xo.Layout = op.Layout{Shape: []int{2, 2}, Strides: []int{2, 1}, Offset: 1}
	// y as a column [3,1] broadcast to [3,2].
	ycol := y
	ycol.Layout = op.Layout{Shape: []int{3, 2}, Strides: []int{1, 0}}
	tests := []struct {
		name string
		in   []device.Operand
		out  []int
		want []float32
	}{
		{"contiguous", []device.Operand{x, x}, []int{2, 3}, []float32{2, 4, 6, 8, 10, 12}},
		{"broadcast", []device.Operand{x, yb}, []int{2, 3}, []float32{11, 22, 33, 14, 25, 36}},
		{"transposed", []device.Operand{xt, xt}, []int{3, 2}, []float32{2, 8, 4, 10, 6, 12}},
		{"stepped", []device.Operand{xs, xs}, []int{2, 2}, []float32{2, 6, 8, 12}},
		{"contiguous with offset", []device.Operand{xo, xo}, []int{2, 2}, []float32{4, 6, 8, 10}},
		{"column broadcast over a transpose", []device.Operand{xt, ycol}, []int{3, 2}, []float32{11, 14, 22, 25, 33, 36}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := be.Alloc(0, 4*op.Numel(tc.out))
			if err != nil {
				t.Fatal(err)
			}
			o := device.Operand{Buf: out, DType: dtype.F32, Layout: op.Contiguous(tc.out)}
			na, _ := add.Normalize(nil)
			if err := be.Launch(0, &device.Launch{Op: add, Attrs: na, In: tc.in, Out: []device.Operand{o}}); err != nil {
				t.Fatal(err)
			}
			if got := readF32(t, be, o); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	// The same launch again hits the executable cache.
	_, c0, _ := be.CacheStats()
	out, _ := be.Alloc(0, 24)
	o := device.Operand{Buf: out, DType: dtype.F32, Layout: op.Contiguous([]int{2, 3})}
	na, _ := add.Normalize(nil)
	if err := be.Launch(0, &device.Launch{Op: add, Attrs: na, In: []device.Operand{x, x}, Out: []device.Operand{o}}); err != nil {
		t.Fatal(err)
	}
	if _, c1, _ := be.CacheStats(); c1 != c0 {
		t.Errorf("a repeated launch compiled again (%d -> %d)", c0, c1)
	}
}

func TestXLACopyInPlace(t *testing.T) {
	be := xla(t)
	cp, _ := op.Lookup("copy_")
	dst := operand(t, be, dtype.F32, []int{2, 3}, f32bytes(0, 0, 0, 0, 0, 0))
	// Column 1 of dst (strided view) <- [7, 8] converted from i64.
	col := dst
	col.Layout = op.Layout{Shape: []int{2}, Strides: []int{3}, Offset: 1}
	raw := make([]byte, 16)
	dtype.PutInt64(dtype.I64, raw, 0, 7)
	dtype.PutInt64(dtype.I64, raw, 1, 8)
	src := operand(t, be, dtype.I64, []int{2}, raw)
	if err := be.Launch(0, &device.Launch{Op: cp, In: []device.Operand{col, src}}); err != nil {
		t.Fatal(err)
	}
	if got, want := readF32(t, be, dst), []float32{0, 7, 0, 0, 8, 0}; !slices.Equal(got, want) {
		t.Errorf("strided copy_: got %v, want %v", got, want)
	}
	// Whole tensor <- broadcast scalar.
	s := operand(t, be, dtype.F32, []int{}, f32bytes(float32(math.Pi)))
	if err := be.Launch(0, &device.Launch{Op: cp, In: []device.Operand{dst, s}}); err != nil {
		t.Fatal(err)
	}
	for _, v := range readF32(t, be, dst) {
		if v != float32(math.Pi) {
			t.Fatalf("broadcast copy_: got %v", readF32(t, be, dst))
		}
	}
}

// TestXLACompileTime checks the eager executable cache compiles once per
// distinct op and shape and accounts the compile time.
func TestXLACompileTime(t *testing.T) {
	be := xla(t)
	un := []string{"exp", "log", "tanh", "sqrt", "neg", "abs", "sin", "cos", "erf", "floor"}
	t0 := be.CompileTime()
	_, c0, _ := be.CacheStats()
	for i, name := range un {
		d, _ := op.Lookup(name)
		x := operand(t, be, dtype.F32, []int{7, i + 3}, make([]byte, 4*7*(i+3)))
		out, _ := be.Alloc(0, 4*7*(i+3))
		o := device.Operand{Buf: out, DType: dtype.F32, Layout: op.Contiguous([]int{7, i + 3})}
		na, _ := d.Normalize(nil)
		if err := be.Launch(0, &device.Launch{Op: d, Attrs: na, In: []device.Operand{x}, Out: []device.Operand{o}}); err != nil {
			t.Fatal(err)
		}
	}
	_, c1, _ := be.CacheStats()
	// Each distinct op and shape compiles one executable, and its time is
	// counted; the mean time is logged for the record.
	if c1-c0 != len(un) {
		t.Fatalf("%d launches of distinct ops compiled %d executables, want %d", len(un), c1-c0, len(un))
	}
	if dt := be.CompileTime() - t0; dt <= 0 {
		t.Fatalf("compile time did not grow over %d compiles (%v)", c1-c0, dt)
	} else {
		t.Logf("%d compiles, %v each", c1-c0, dt/time.Duration(c1-c0))
	}
}

func TestXLAEagerCacheIsBounded(t *testing.T) {
	be := xla(t)
	prev := pjrt.MaxEagerExecutables
	pjrt.MaxEagerExecutables = 2
	defer func() { pjrt.MaxEagerExecutables = prev }()
	neg, _ := op.Lookup("neg")
	na, _ := neg.Normalize(nil)
	for _, n := range []int{11, 12, 13, 11} {
		raw := make([]float32, n)
		for i := range raw {
			raw[i] = float32(i)
		}
		x := operand(t, be, dtype.F32, []int{n}, f32bytes(raw...))
		out, _ := be.Alloc(0, 4*n)
		o := device.Operand{Buf: out, DType: dtype.F32, Layout: op.Contiguous([]int{n})}
		if err := be.Launch(0, &device.Launch{Op: neg, Attrs: na, In: []device.Operand{x}, Out: []device.Operand{o}}); err != nil {
			t.Fatal(err)
		}
		got := readF32(t, be, o)
		if got[n-1] != -float32(n-1) {
			t.Fatalf("neg: got %v", got)
		}
		if e, _, _ := be.CacheStats(); e > 2 {
			t.Fatalf("%d cached executables, bound 2", e)
		}
	}
}

// BenchmarkXLALaunchAdd measures one eager launch of add on 1024 f32
// elements with a warm executable cache (graph build, fingerprint, execute).
func BenchmarkXLALaunchAdd(b *testing.B) {
	be := xla(b)
	add, _ := op.Lookup("add")
	na, _ := add.Normalize(nil)
	buf, _ := be.Alloc(0, 4096)
	_ = be.Write(0, buf, 0, make([]byte, 4096))
	x := device.Operand{Buf: buf, DType: dtype.F32, Layout: op.Contiguous([]int{1024})}
	out, _ := be.Alloc(0, 4096)
	o := device.Operand{Buf: out, DType: dtype.F32, Layout: op.Contiguous([]int{1024})}
	l := &device.Launch{Op: add, Attrs: na, In: []device.Operand{x, x}, Out: []device.Operand{o}}
	if err := be.Launch(0, l); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := be.Launch(0, l); err != nil {
			b.Fatal(err)
		}
	}
}
