package tensor_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
	"github.com/gotpu/gotpu/tensor"
)

func withMode(t *testing.T, m tensor.Mode) {
	prev := tensor.SetMode(m)
	t.Cleanup(func() { tensor.SetMode(prev) })
}

func catch(f func()) error { return tensor.Catch(f) }

func TestDebugEmbeddingOutOfRange(t *testing.T) {
	for _, devName := range []string{"cpu", "testdev"} {
		t.Run(devName, func(t *testing.T) {
			withMode(t, tensor.Debug)
			dev := tensor.MustDevice(devName)
			w := tensor.FromSlice(dev, []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 5, 2)
			idx := tensor.FromSlice(dev, []int64{0, 7, 2})
			err := catch(func() { tensor.Apply("embedding", []*tensor.Tensor{w, idx}, nil) }) // line checked below
			if err == nil {
				t.Fatal("no error for index 7 into 5 rows")
			}
			msg := err.Error()
			for _, want := range []string{"embedding", "7", "5", "debug_test.go:"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not name %q", msg, want)
				}
			}
			var te *tensor.Error
			if !errors.As(err, &te) || !strings.HasPrefix(te.Op, "embedding") {
				t.Errorf("error op = %v", err)
			}
		})
	}
}

func TestDebugFirstNonFinite(t *testing.T) {
	withMode(t, tensor.Debug)
	tensor.ResetNonFinite()
	t.Cleanup(tensor.ResetNonFinite)
	cpu := tensor.MustDevice("cpu")
	x := tensor.FromSlice(cpu, []float32{1, -1, 2})
	y := tensor.Apply1("log", []*tensor.Tensor{x}, nil) // produces NaN: the first producer
	z := tensor.Apply1("exp", []*tensor.Tensor{y}, nil) // propagates it: not a producer
	_ = z
	e := tensor.FirstNonFinite()
	if e == nil {
		t.Fatal("no NaN producer recorded")
	}
	if e.Op != "log" || !strings.Contains(e.Site, "debug_test.go:") {
		t.Fatalf("first producer = %q at %q, want log at debug_test.go", e.Op, e.Site)
	}
	// With SetNaNPanic the producer panics at once.
	prev := tensor.SetNaNPanic(true)
	defer tensor.SetNaNPanic(prev)
	tensor.ResetNonFinite()
	err := catch(func() { tensor.Apply1("sqrt", []*tensor.Tensor{x}, nil) })
	if err == nil || !strings.Contains(err.Error(), "sqrt") || !strings.Contains(err.Error(), "NaN") {
		t.Fatalf("NaN panic = %v", err)
	}
}

func TestStrictDoesNotTrackNonFinite(t *testing.T) {
	withMode(t, tensor.Strict)
	tensor.ResetNonFinite()
	x := tensor.FromSlice(tensor.MustDevice("cpu"), []float32{-1})
	tensor.Apply1("log", []*tensor.Tensor{x}, nil)
	if e := tensor.FirstNonFinite(); e != nil {
		t.Fatalf("strict mode recorded %v", e)
	}
}

// An error raised asynchronously on the test backend's stream surfaces at
// the next sync point with the op's name and the line that launched it.
func TestAsyncErrorSurfacesAtSync(t *testing.T) {
	withMode(t, tensor.Strict)
	dev := tensor.MustDevice("testdev")
	x := tensor.FromSlice(dev, []float32{1, 2, 3})
	idx := tensor.FromSlice(dev, []int64{5})
	var y *tensor.Tensor
	launchErr := catch(func() {
		y = tensor.Apply1("index_select", []*tensor.Tensor{x, idx}, op.Attrs{"dim": 0}) // enqueued; fails later
	})
	if launchErr != nil {
		t.Fatalf("launch on an async device reported synchronously: %v", launchErr)
	}
	err := tensor.Sync(dev)
	if err == nil {
		t.Fatal("Sync returned no error")
	}
	for _, want := range []string{"index_select", "debug_test.go:", "5"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("async error %q does not name %q", err, want)
		}
	}
	_ = y
	if err := tensor.Sync(dev); err != nil {
		t.Fatalf("error not cleared after Sync: %v", err)
	}
}

func TestUseAfterFree(t *testing.T) {
	x := tensor.FromSlice(tensor.MustDevice("cpu"), []float32{1, 2})
	v := tensor.Apply1("reshape", []*tensor.Tensor{x}, op.Attrs{"shape": []int{2, 1}})
	x.Free()
	err := catch(func() { tensor.Apply1("copy", []*tensor.Tensor{v}, nil) })
	if err == nil || !strings.Contains(err.Error(), "freed") || !strings.Contains(err.Error(), "copy") {
		t.Fatalf("use after free: %v", err)
	}
}

func TestDeviceMismatch(t *testing.T) {
	a := tensor.FromSlice(tensor.MustDevice("cpu"), []float32{1})
	b := tensor.FromSlice(tensor.MustDevice("testdev:1"), []float32{1})
	err := catch(func() { tensor.Apply1("copy_", []*tensor.Tensor{a, b}, nil) })
	if err == nil || !strings.Contains(err.Error(), "cpu") || !strings.Contains(err.Error(), "testdev:1") {
		t.Fatalf("device mismatch error = %v", err)
	}
}

func TestMissingKernelNamesOpAndDevice(t *testing.T) {
	testBackend.mu.Lock()
	testBackend.unsupported["copy"] = true
	testBackend.mu.Unlock()
	defer func() {
		testBackend.mu.Lock()
		delete(testBackend.unsupported, "copy")
		testBackend.mu.Unlock()
	}()
	x := tensor.FromSlice(tensor.MustDevice("testdev"), []float32{1, 2, 3, 4}, 2, 2)
	xt := tensor.Apply1("permute", []*tensor.Tensor{x}, op.Attrs{"dims": []int{1, 0}})
	err := catch(func() { tensor.Apply1("copy", []*tensor.Tensor{xt}, nil) })
	if err == nil || !errors.Is(err, device.ErrUnsupported) || !strings.Contains(err.Error(), "copy") || !strings.Contains(err.Error(), "testdev") {
		t.Fatalf("missing kernel error = %v", err)
	}
}

func TestMatmulShapeMismatch(t *testing.T) {
	cpu := tensor.MustDevice("cpu")
	a := tensor.FromBytes(cpu, dtype.F32, []int{2, 3}, make([]byte, 24))
	b := tensor.FromBytes(cpu, dtype.F32, []int{4, 5}, make([]byte, 80))
	// It panics...
	func() {
		defer func() {
			r := recover()
			if r == nil {
				t.Fatal("no panic")
			}
			if _, ok := r.(*tensor.Error); !ok {
				t.Fatalf("panic value %T, want *tensor.Error", r)
			}
		}()
		tensor.Apply1("matmul", []*tensor.Tensor{a, b}, nil)
	}()
	// ...and Catch returns it as an error naming the op and both shapes.
	err := catch(func() { tensor.Apply1("matmul", []*tensor.Tensor{a, b}, nil) })
	if err == nil {
		t.Fatal("Catch returned nil")
	}
	for _, want := range []string{"matmul", "2x3", "4x5"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

func TestCatchPropagatesOtherPanics(t *testing.T) {
	defer func() {
		if r := recover(); r != "not a tensor error" {
			t.Fatalf("recovered %v", r)
		}
	}()
	_ = catch(func() { panic("not a tensor error") })
}

// Many goroutines dispatching on cpu and on the asynchronous test backend at
// once (run with -race).
func TestConcurrentDispatch(t *testing.T) {
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			devName := []string{"cpu", "testdev", "testdev:1"}[g%3]
			dev := tensor.MustDevice(devName)
			for i := 0; i < 50; i++ {
				x := tensor.FromSlice(dev, []float32{float32(g), float32(i), 1, 2}, 2, 2)
				y := tensor.Apply1("permute", []*tensor.Tensor{x}, op.Attrs{"dims": []int{1, 0}})
				z := tensor.Apply1("copy", []*tensor.Tensor{y}, nil)
				w := tensor.Apply1("convert", []*tensor.Tensor{z}, op.Attrs{"dtype": dtype.F64})
				got := w.Float64s()
				if got[0] != float64(g) || got[1] != 1 || got[2] != float64(i) {
					t.Errorf("goroutine %d iter %d: %v", g, i, got)
					return
				}
			}
		}(g)
	}
	wg.Wait()
}

func TestScalarDeviceAndFree(t *testing.T) {
	s := tensor.Scalar(2.5)
	if s.Device().Type != "cpu" {
		t.Fatalf("scalar device %v", s.Device())
	}
	s.Free() // no storage: nothing to do, no crash
}

func TestInPlaceIntoExpandedIsAnError(t *testing.T) {
	cpu := tensor.MustDevice("cpu")
	x := tensor.FromSlice(cpu, []float32{1})
	e := tensor.Apply1("expand", []*tensor.Tensor{x}, op.Attrs{"shape": []int{3}})
	src := tensor.FromSlice(cpu, []float32{4, 5, 6})
	err := catch(func() { tensor.Apply("copy_", []*tensor.Tensor{e, src}, nil) })
	if err == nil || !strings.Contains(err.Error(), "single memory location") {
		t.Fatalf("copy_ into an expanded tensor: %v", err)
	}
	if x.Float64s()[0] != 1 {
		t.Fatal("the failed write changed the tensor")
	}
}
