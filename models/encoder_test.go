package models

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/gotpu/gotpu/backend/cpu"
	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/hf/config"
	st "github.com/gotpu/gotpu/hf/safetensors"
	"github.com/gotpu/gotpu/nn"
	"github.com/gotpu/gotpu/tensor"
)

var cpu = device.Device{Type: "cpu"}

// encoderRef is expected.json of a tiny encoder checkpoint made with
// transformers (testdata/models/{bert,roberta}).
type encoderRef struct {
	Family             string    `json:"family"`
	InputIDs           [][]int64 `json:"input_ids"`
	PositionIDs        [][]int64 `json:"position_ids"`
	BatchInputIDs      [][]int64 `json:"batch_input_ids"`
	BatchAttentionMask [][]int64 `json:"batch_attention_mask"`
	BatchPositionIDs   [][]int64 `json:"batch_position_ids"`
	BatchPadID         int64     `json:"batch_pad_id"`
	BatchPadding       string    `json:"batch_padding"`
}

func readEncoderRef(t *testing.T, dir string) (encoderRef, Source) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref encoderRef
	if err := json.Unmarshal(data, &ref); err != nil {
		t.Fatal(err)
	}
	exp, err := OpenSafetensors(filepath.Join(dir, "expected.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exp.Close() })
	return ref, exp
}

func ids2D(rows [][]int64) *tensor.Tensor { return ids2DOn(cpu, rows) }

// ids2DOn is ids2D on dev.
func ids2DOn(dev device.Device, rows [][]int64) *tensor.Tensor {
	var flat []int64
	for _, r := range rows {
		flat = append(flat, r...)
	}
	return tensor.FromSlice(dev, flat, len(rows), len(rows[0]))
}

// allClose compares as torch.testing.assert_close does (|a-b| <= atol +
// rtol·|b|), over the positions keep(i) selects, and returns the largest
// absolute difference.
func allClose(t *testing.T, what string, got, want []float32, atol, rtol float64, keep func(i int) bool) float64 {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	worst, bad := 0.0, 0
	for i := range got {
		if keep != nil && !keep(i) {
			continue
		}
		d := math.Abs(float64(got[i]) - float64(want[i]))
		if !(d <= atol+rtol*math.Abs(float64(want[i]))) {
			if bad < 5 {
				t.Errorf("%s[%d] = %g, want %g (diff %.3g)", what, i, got[i], want[i], d)
			}
			bad++
		}
		if d > worst || d != d {
			worst = d
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d values outside atol %g rtol %g; max diff %.3g", what, bad, atol, rtol, worst)
	}
	return worst
}

func loadTiny(t *testing.T, family string, o Options) *Model {
	t.Helper()
	m, err := Load(filepath.Join("..", "testdata", "models", family), o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestEncoderMatchesTransformers runs the tiny random BertModel and
// RobertaModel checkpoints and compares last_hidden_state and pooler_output
// with transformers' (f32, atol = rtol = 1e-4): one unpadded sequence, and
// a right-padded batch of two compared on the real tokens only.
func TestEncoderMatchesTransformers(t *testing.T) { encoderParity(t, cpu) }

// encoderParity is TestEncoderMatchesTransformers on dev.
func encoderParity(t *testing.T, dev device.Device) {
	for _, family := range []string{"bert", "roberta"} {
		t.Run(family, func(t *testing.T) {
			dir := filepath.Join("..", "testdata", "models", family)
			ref, exp := readEncoderRef(t, dir)
			m := loadTiny(t, family, Options{Device: dev})
			if m.Encoder == nil || m.LM != nil {
				t.Fatalf("Encoder %v LM %v", m.Encoder, m.LM)
			}
			if m.Config.Family() != family || len(m.Unused) != 0 {
				t.Errorf("family %q, unused %v", m.Config.Family(), m.Unused)
			}
			want := func(name string) []float32 {
				w, err := exp.Tensor(name, cpu, dtype.F32)
				if err != nil {
					t.Fatal(err)
				}
				return w.Float32s()
			}
			e := m.Encoder
			var worst float64
			err := tensor.Catch(func() {
				ids := ids2DOn(dev, ref.InputIDs)
				h := e.Forward(ids, nil, nil)
				if s := h.Shape(); len(s) != 3 || s[0] != 1 || s[1] != len(ref.InputIDs[0]) || s[2] != m.Config.HiddenSize {
					t.Fatalf("last_hidden_state shape %v", s)
				}
				worst = max(worst, allClose(t, "last_hidden_state", h.Float32s(), want("last_hidden_state"), 1e-4, 1e-4, nil))
				worst = max(worst, allClose(t, "pooler_output", e.PoolerOutput(h).Float32s(), want("pooler_output"), 1e-4, 1e-4, nil))

				bids, mask := ids2DOn(dev, ref.BatchInputIDs), ids2DOn(dev, ref.BatchAttentionMask)
				bh := e.Forward(bids, mask, nil)
				tt, hd := len(ref.BatchInputIDs[0]), m.Config.HiddenSize
				real := func(i int) bool {
					pos := i / hd
					return ref.BatchAttentionMask[pos/tt][pos%tt] != 0
				}
				worst = max(worst, allClose(t, "batch_last_hidden_state", bh.Float32s(), want("batch_last_hidden_state"), 1e-4, 1e-4, real))
				worst = max(worst, allClose(t, "batch_pooler_output", e.PoolerOutput(bh).Float32s(), want("batch_pooler_output"), 1e-4, 1e-4, nil))
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: max |diff| %.3g", family, worst)
		})
	}
}

// TestEncoderBF16 loads the tiny checkpoints in bf16 and compares with
// transformers' model.to(torch.bfloat16) loosely (bf16 keeps 8 bits).
func TestEncoderBF16(t *testing.T) {
	for _, family := range []string{"bert", "roberta"} {
		t.Run(family, func(t *testing.T) {
			ref, exp := readEncoderRef(t, filepath.Join("..", "testdata", "models", family))
			if _, ok := exp.Shape("last_hidden_state_bf16"); !ok {
				t.Skip("no last_hidden_state_bf16 in the reference")
			}
			m := loadTiny(t, family, Options{DType: dtype.BF16})
			w, err := exp.Tensor("last_hidden_state_bf16", cpu, dtype.F32)
			if err != nil {
				t.Fatal(err)
			}
			err = tensor.Catch(func() {
				h := m.Encoder.Forward(ids2D(ref.InputIDs), nil, nil)
				if h.DType() != dtype.BF16 {
					t.Errorf("dtype %s", h.DType())
				}
				d := allClose(t, "last_hidden_state_bf16", h.ToDType(dtype.F32).Float32s(), w.Float32s(), 0.1, 0.05, nil)
				t.Logf("bf16 max |diff| %.3g", d)
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestRobertaPositions checks the position ids RoBERTa makes from the ids
// against transformers' (recorded in expected.json).
func TestRobertaPositions(t *testing.T) {
	for _, family := range []string{"bert", "roberta"} {
		ref, _ := readEncoderRef(t, filepath.Join("..", "testdata", "models", family))
		m := loadTiny(t, family, Options{})
		check := func(ids, want [][]int64) {
			t.Helper()
			got := m.Encoder.positions(ids2D(ids)).Expand(len(ids), len(ids[0])).Contiguous().Int64s()
			for i, row := range want {
				for j, p := range row {
					if got[i*len(row)+j] != p {
						t.Fatalf("%s: positions %v, want %v", family, got, want)
					}
				}
			}
		}
		check(ref.InputIDs, ref.PositionIDs)
		check(ref.BatchInputIDs, ref.BatchPositionIDs)
	}
}

// rewrite copies the tiny checkpoint of family into a temporary directory,
// passing each tensor through edit (which may rename, reshape or drop it:
// an empty name drops), and returns the directory.
func rewrite(t *testing.T, family string, edit func(*st.Tensor), extra ...st.Tensor) string {
	t.Helper()
	src := filepath.Join("..", "testdata", "models", family)
	r, err := st.OpenPath(filepath.Join(src, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []st.Tensor
	for _, name := range r.Names() {
		info, err := r.Info(name)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := r.Bytes(name)
		if err != nil {
			t.Fatal(err)
		}
		tt := st.Tensor{Name: name, DType: info.DType, Shape: info.Shape, Data: append([]byte(nil), raw...)}
		edit(&tt)
		if tt.Name != "" {
			out = append(out, tt)
		}
	}
	out = append(out, extra...)
	dir := t.TempDir()
	if err := st.Write(filepath.Join(dir, "model.safetensors"), out, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(filepath.Join(src, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestEncoderCheckpointVariants: weights saved by a task model under
// "bert." / "roberta." load to the same network, with the head left
// unused; a checkpoint without the pooler loads without one.
func TestEncoderCheckpointVariants(t *testing.T) {
	for _, family := range []string{"bert", "roberta"} {
		t.Run(family, func(t *testing.T) {
			ref, _ := readEncoderRef(t, filepath.Join("..", "testdata", "models", family))
			base := loadTiny(t, family, Options{})
			head := st.Tensor{Name: "lm_head.bias", DType: st.F32, Shape: []int{2}, Data: make([]byte, 8)}
			dir := rewrite(t, family, func(tt *st.Tensor) { tt.Name = family + "." + tt.Name }, head)
			m, err := Load(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if m.Encoder.Pooler == nil {
				t.Error("prefixed pooler not found")
			}
			if len(m.Unused) != 1 || m.Unused[0] != "lm_head.bias" {
				t.Errorf("Unused = %v, want the head", m.Unused)
			}
			ids := ids2D(ref.InputIDs)
			a := base.Encoder.Forward(ids, nil, nil).Float32s()
			b := m.Encoder.Forward(ids, nil, nil).Float32s()
			allClose(t, "prefixed", b, a, 0, 0, nil)
			// Parameter names are the state dict's, without the prefix.
			names := map[string]bool{}
			for _, p := range nn.NamedParameters(m.Encoder) {
				names[p.Name] = true
			}
			for _, n := range []string{"embeddings.word_embeddings.weight", "encoder.layer.1.attention.self.query.weight",
				"encoder.layer.0.output.LayerNorm.bias", "pooler.dense.weight"} {
				if !names[n] {
					t.Errorf("no parameter %q in %v", n, names)
				}
			}
			if len(names) != 39 {
				t.Errorf("%d parameters, want 39", len(names))
			}

			noPool := rewrite(t, family, func(tt *st.Tensor) {
				if strings.HasPrefix(tt.Name, "pooler.") {
					tt.Name = ""
				}
			})
			m, err = Load(noPool, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if m.Encoder.Pooler != nil || m.Encoder.PoolerOutput(m.Encoder.Forward(ids, nil, nil)) != nil {
				t.Error("pooler without weights")
			}
		})
	}
}

// TestEncoderLoadErrors: a missing weight, a weight of the wrong shape and
// unsupported variants fail Load with errors naming them.
func TestEncoderLoadErrors(t *testing.T) {
	missing := rewrite(t, "bert", func(tt *st.Tensor) {
		if tt.Name == "encoder.layer.1.output.dense.weight" {
			tt.Name = ""
		}
	})
	if _, err := Load(missing, Options{}); !errors.Is(err, ErrMissingWeight) || !strings.Contains(err.Error(), "encoder.layer.1.output.dense.weight") {
		t.Errorf("missing weight: %v", err)
	}
	wrong := rewrite(t, "bert", func(tt *st.Tensor) {
		if tt.Name == "embeddings.position_embeddings.weight" {
			tt.Shape = []int{tt.Shape[0] / 2, tt.Shape[1]}
			tt.Data = tt.Data[:len(tt.Data)/2]
		}
	})
	if _, err := Load(wrong, Options{}); !errors.Is(err, ErrWeights) || !strings.Contains(err.Error(), "position_embeddings") {
		t.Errorf("wrong shape: %v", err)
	}
	cfgOf := func(edit map[string]any) *config.Config {
		data, _ := os.ReadFile(filepath.Join("..", "testdata", "models", "bert", "config.json"))
		var raw map[string]any
		json.Unmarshal(data, &raw)
		for k, v := range edit {
			raw[k] = v
		}
		data, _ = json.Marshal(raw)
		c, err := config.Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	src, err := OpenSafetensors(filepath.Join("..", "testdata", "models", "bert"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	for _, tc := range []struct {
		edit    map[string]any
		mention string
	}{
		{map[string]any{"position_embedding_type": "relative_key"}, "relative_key"},
		{map[string]any{"is_decoder": true}, "is_decoder"},
		{map[string]any{"hidden_act": "mish"}, "mish"},
	} {
		_, err := FromSource(cfgOf(tc.edit), src, Options{})
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("%v: %v", tc.edit, err)
		}
	}
}

// TestEncoderForwardErrors: bad arguments panic with *tensor.Error, which
// tensor.Catch turns into errors.
func TestEncoderForwardErrors(t *testing.T) {
	m := loadTiny(t, "roberta", Options{})
	e := m.Encoder
	ids := tensor.FromSlice(cpu, []int64{5, 6, 7}, 1, 3)
	for name, f := range map[string]func(){
		"1-D ids":      func() { e.Forward(tensor.FromSlice(cpu, []int64{5, 6}, 2), nil, nil) },
		"float ids":    func() { e.Forward(tensor.FromSlice(cpu, []float32{5, 6}, 1, 2), nil, nil) },
		"mask shape":   func() { e.Forward(ids, tensor.FromSlice(cpu, []int64{1, 1}, 1, 2), nil) },
		"types shape":  func() { e.Forward(ids, nil, tensor.FromSlice(cpu, []int64{0}, 1, 1)) },
		"too long":     func() { e.Forward(tensor.Full(cpu, dtype.I64, 5, 1, m.Config.MaxPositions), nil, nil) },
		"id too large": func() { e.Forward(tensor.FromSlice(cpu, []int64{5, 1 << 20}, 1, 2), nil, nil) },
	} {
		if err := tensor.Catch(f); err == nil {
			t.Errorf("%s: no error", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}
