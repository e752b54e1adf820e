package checkpoint

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	_ "github.com/gotpu/gotpu/backend/cpu"
	"github.com/gotpu/gotpu/tensor"
)

var cpu = tensor.MustDevice("cpu")

func TestRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ck.safetensors")
	a := tensor.FromSlice(cpu, []float32{1, 2, 3, 4}, 2, 2)
	b := tensor.FromSlice(cpu, []int64{7})
	c := tensor.FromSlice(cpu, []bool{true, false})
	err := Save(path, []Named{{"fc.weight", a}, {"optim.0.step", b}, {"mask", c}}, map[string]string{"step": "12"})
	if err != nil {
		t.Fatal(err)
	}
	got, meta, err := Load(path, cpu)
	if err != nil {
		t.Fatal(err)
	}
	if meta["step"] != "12" || meta[FormatKey] != FormatValue {
		t.Fatalf("meta %v", meta)
	}
	if v := got["fc.weight"].Float64s(); v[3] != 4 || got["fc.weight"].Shape()[0] != 2 {
		t.Fatalf("fc.weight %v", got["fc.weight"])
	}
	if got["optim.0.step"].Int64s()[0] != 7 || got["mask"].DType().String() != "bool" {
		t.Fatal("int/bool tensors")
	}
	if err := Save(path, []Named{{"x", a}, {"x", a}}, nil); err == nil {
		t.Fatal("duplicate keys accepted")
	}
}

func TestCorruptFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ck.safetensors")
	big := tensor.FromSlice(cpu, make([]float32, 1000), 10, 100)
	if err := Save(path, []Named{{"w", big}}, nil); err != nil {
		t.Fatal(err)
	}
	full, _ := os.ReadFile(path)
	for _, n := range []int{0, 4, 8, 20, len(full) / 2, len(full) - 1} {
		p := filepath.Join(dir, fmt.Sprintf("trunc%d", n))
		os.WriteFile(p, full[:n], 0o644)
		_, _, err := Load(p, cpu)
		if err == nil || !errors.Is(err, ErrCorrupt) {
			t.Errorf("truncated at %d: %v", n, err)
		}
	}
	if _, _, err := Load(filepath.Join(dir, "missing"), cpu); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// childSaveLoop is run in a child process by TestKillDuringSave: it saves
// checkpoints forever, each with every element equal to its version.
func childSaveLoop(path string) {
	vals := make([]float32, 1<<20) // 4 MiB per save
	for i := 1; ; i++ {
		for k := range vals {
			vals[k] = float32(i)
		}
		x := tensor.FromSlice(cpu, vals)
		if err := Save(path, []Named{{"w", x}}, map[string]string{"version": strconv.Itoa(i)}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
	}
}

func TestMain(m *testing.M) {
	if p := os.Getenv("GOTPU_CKPT_CHILD"); p != "" {
		childSaveLoop(p)
		return
	}
	os.Exit(m.Run())
}

// TestKillDuringSave kills a process with SIGKILL while it saves
// checkpoints, 20 times, and checks that the checkpoint on disk always loads
// and is one complete version.
func TestKillDuringSave(t *testing.T) {
	trials := 20
	if testing.Short() {
		trials = 5
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "ck.safetensors")
	for trial := 0; trial < trials; trial++ {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), "GOTPU_CKPT_CHILD="+path)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Wait for at least one checkpoint, then kill at a random moment.
		deadline := time.Now().Add(20 * time.Second)
		for {
			if _, err := os.Stat(path); err == nil {
				break
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatal("child wrote no checkpoint")
			}
			time.Sleep(2 * time.Millisecond)
		}
		time.Sleep(time.Duration(rand.IntN(40)) * time.Millisecond)
		cmd.Process.Kill()
		cmd.Wait()
		got, meta, err := Load(path, cpu)
		if err != nil {
			t.Fatalf("trial %d: previous checkpoint unloadable after kill -9: %v", trial, err)
		}
		v, _ := strconv.Atoi(meta["version"])
		w := got["w"].Float32s()
		if v < 1 || w[0] != float32(v) || w[len(w)-1] != float32(v) {
			t.Fatalf("trial %d: checkpoint mixes versions: meta %d, first %v last %v", trial, v, w[0], w[len(w)-1])
		}
	}
}
