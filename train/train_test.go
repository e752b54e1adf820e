package train

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/gotpu/gotpu/checkpoint"
	"github.com/gotpu/gotpu/data/mnist"
	"github.com/gotpu/gotpu/nn"
	"github.com/gotpu/gotpu/optim"
	"github.com/gotpu/gotpu/tensor"
)

func mnistDir(t *testing.T) string {
	t.Helper()
	dir, err := mnist.DefaultDir()
	if err != nil {
		t.Skip(err)
	}
	return dir
}

type parityDoc struct {
	Steps int `json:"steps"`
	Batch int `json:"batch"`
	MLP   struct {
		LR     float64   `json:"lr"`
		Losses []float64 `json:"losses"`
	} `json:"mlp"`
	CNN struct {
		LR       float64   `json:"lr"`
		Momentum float64   `json:"momentum"`
		Losses   []float64 `json:"losses"`
	} `json:"cnn"`
}

// TestParityWithPyTorch trains from PyTorch's initial weights on the same
// batches with the same optimizer and compares the loss at each of 50 steps
// (tools/golden/train_gen.py).
func TestParityWithPyTorch(t *testing.T) {
	b, err := os.ReadFile("../testdata/train/parity.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc parityDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	train, _, err := mnist.Load(mnistDir(t))
	if err != nil {
		t.Fatal(err)
	}
	cpu := tensor.MustDevice("cpu")
	for _, tc := range []struct {
		name string
		want []float64
		// stable is how many steps compare at 1e-4 relative (all of them;
		// later ones would compare at 5e-2). The CNN's reference uses SGD
		// at lr 0.01: at 0.05 the run turned chaotic after step 30 (scaling
		// lr by 1 + k*1e-7 moved step 35 by more than 1e-4), so agreement
		// there was luck, not parity.
		stable int
		opt    func(ps []*tensor.Tensor) optim.Optimizer
	}{
		{"mlp", doc.MLP.Losses, doc.Steps, func(ps []*tensor.Tensor) optim.Optimizer { return optim.NewAdamW(optim.Params(ps), doc.MLP.LR) }},
		{"cnn", doc.CNN.Losses, doc.Steps, func(ps []*tensor.Tensor) optim.Optimizer {
			return optim.NewSGD([]*optim.Group{{Params: ps, Options: map[string]float64{"momentum": doc.CNN.Momentum}}}, doc.CNN.LR)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model, err := NewModel(tc.name, cpu)
			if err != nil {
				t.Fatal(err)
			}
			sd, _, err := checkpoint.ReadSafetensors("../testdata/train/"+tc.name+"_init.safetensors", cpu)
			if err != nil {
				t.Fatal(err)
			}
			if err := nn.LoadStateDict(model, sd, true); err != nil {
				t.Fatal(err)
			}
			opt := tc.opt(nn.Parameters(model))
			col := collate(cpu)
			for s := 0; s < doc.Steps; s++ {
				ex := make([]mnist.Example, doc.Batch)
				for i := range ex {
					ex[i] = train.At(s*doc.Batch + i)
				}
				bt, err := col(ex)
				if err != nil {
					t.Fatal(err)
				}
				loss := trainStep(model, opt, bt)
				want := tc.want[s]
				rtol := 1e-4
				if s >= tc.stable {
					rtol = 5e-2
				}
				if math.Abs(loss-want) > rtol*math.Abs(want)+1e-6 {
					t.Fatalf("step %d: loss %.7f, PyTorch %.7f (rel %.2g)", s, loss, want, math.Abs(loss-want)/want)
				}
			}
		})
	}
}

// TestResumeIsExact interrupts a run, resumes it from the checkpoint and
// checks that every later step's loss equals the uninterrupted run's.
func TestResumeIsExact(t *testing.T) {
	dir := mnistDir(t)
	base := Config{Model: "mlp", Epochs: 2, BatchSize: 32, DataDir: dir, TrainLimit: 320, TestLimit: 100, Seed: 3}
	full, err := RunMNIST(context.Background(), base, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(full.Losses) != 20 {
		t.Fatalf("uninterrupted run took %d steps, want 20", len(full.Losses))
	}
	ck := t.TempDir()
	first := base
	first.CheckpointDir, first.MaxSteps = ck, 13
	part1, err := RunMNIST(context.Background(), first, nil)
	if err != nil {
		t.Fatal(err)
	}
	second := base
	second.CheckpointDir, second.Resume = ck, true
	part2, err := RunMNIST(context.Background(), second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if part2.ResumedFromStep != 13 {
		t.Fatalf("resumed from step %d", part2.ResumedFromStep)
	}
	got := append(append([]float64(nil), part1.Losses...), part2.Losses...)
	if len(got) != len(full.Losses) {
		t.Fatalf("%d losses after resume, want %d", len(got), len(full.Losses))
	}
	for i := range got {
		if got[i] != full.Losses[i] {
			t.Fatalf("step %d: resumed loss %v, uninterrupted %v", i+1, got[i], full.Losses[i])
		}
	}
	if part2.TestAccuracy != full.TestAccuracy {
		t.Fatalf("test accuracy %v after resume, %v uninterrupted", part2.TestAccuracy, full.TestAccuracy)
	}
	mismatch := base
	mismatch.CheckpointDir, mismatch.Resume, mismatch.Seed = ck, true, 4
	if _, err := RunMNIST(context.Background(), mismatch, nil); err == nil {
		t.Fatal("resuming with another seed was accepted")
	}
}

// writeIDX writes an uncompressed u8 IDX file with dims and zero data.
func writeIDX(t *testing.T, path string, dims ...int) {
	t.Helper()
	b := []byte{0, 0, 0x08, byte(len(dims))}
	n := 1
	for _, d := range dims {
		b = append(b, byte(d>>24), byte(d>>16), byte(d>>8), byte(d))
		n *= d
	}
	b = append(b, make([]byte, n)...)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A well-formed training file with no images is an error, not a crash
// (it was an integer division by zero computing the epoch to start at).
func TestRunMNISTEmptyTrainingSet(t *testing.T) {
	dir := t.TempDir()
	writeIDX(t, dir+"/train-images-idx3-ubyte", 0, 28, 28)
	writeIDX(t, dir+"/train-labels-idx1-ubyte", 0)
	writeIDX(t, dir+"/t10k-images-idx3-ubyte", 1, 28, 28)
	writeIDX(t, dir+"/t10k-labels-idx1-ubyte", 1)
	_, err := func() (_ *Result, err error) {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("RunMNIST panicked: %v", r)
			}
		}()
		return RunMNIST(context.Background(), Config{DataDir: dir, Epochs: 1}, nil)
	}()
	if err == nil {
		t.Fatal("RunMNIST on an empty training set: no error")
	}
}

// Negative sizes in the configuration are an error naming the field, before
// any data is read (a negative batch size used to train with batches of one
// and report batch_size -1).
func TestRunMNISTRejectsNegativeConfig(t *testing.T) {
	for _, c := range []Config{
		{BatchSize: -1}, {Epochs: -2}, {LR: -0.1}, {MaxSteps: -1}, {CheckpointEvery: -3},
	} {
		c.DataDir = t.TempDir() // empty: reading it would fail differently
		_, err := RunMNIST(context.Background(), c, nil)
		if err == nil || !strings.Contains(err.Error(), "must not be negative") {
			t.Errorf("%+v: err %v", c, err)
		}
	}
}
