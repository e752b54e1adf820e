package models

import (
	"fmt"

	"github.com/gotpu/gotpu/compile"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/tensor"
)

// maxStepPrograms bounds the compiled programs of one model: one per
// distinct (batch, tokens, cache size) a process runs.
const maxStepPrograms = 64

// stepLogits runs one step, without autograd recording, and returns the logits of its last position as
// [B, vocab] f32 (all positions [B, T, vocab] with all set). With
// m.Compiled the step is one compiled program per input shape, replayed
// without tracing once it is stable (compile.TraceOnce).
func (m *CausalLM) stepLogits(s Step, cache *KVCache, all bool) (*tensor.Tensor, error) {
	if err := m.checkEager("a step"); err != nil {
		return nil, err
	}
	if !m.Compiled {
		var out *tensor.Tensor
		err := tensor.Catch(func() { tensor.NoGrad(func() { out = m.logitsOf(s, cache, all) }) })
		return out, err
	}
	fn := m.compiledLast
	if all {
		fn = m.compiledAll
	}
	if fn == nil {
		fn = compile.Fn(func(in ...*tensor.Tensor) []*tensor.Tensor {
			nr := len(m.ropes)
			st := Step{IDs: in[0], Positions: in[1], Slots: in[2], invFreq: in[3 : 3+nr]}
			kc := cacheOf(in[3+nr:])
			var out *tensor.Tensor
			tensor.NoGrad(func() { out = m.logitsOf(st, kc, all) })
			return []*tensor.Tensor{out}
		}, compile.TraceOnce(), compile.RecompileLimit(maxStepPrograms), compile.Name(fmt.Sprintf("%s step", m.a.family)))
		if all {
			m.compiledAll = fn
		} else {
			m.compiledLast = fn
		}
	}
	in := []*tensor.Tensor{s.IDs, s.Positions, s.Slots}
	for _, r := range m.ropes {
		in = append(in, r.invFreq(s.SeqLen))
	}
	in = append(in, cache.tensors()...)
	out, err := fn.Call(in...)
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// logitsOf is one forward and the output projection, as f32.
func (m *CausalLM) logitsOf(s Step, cache *KVCache, all bool) *tensor.Tensor {
	h := m.Forward(s, cache)
	if !all {
		h = h.Narrow(1, h.Size(1)-1, 1)
	}
	lg := m.Logits(h).ToDType(dtype.F32)
	if !all {
		lg = lg.Reshape(lg.Size(0), -1)
	}
	return lg
}

// CompileStats returns the counters of the model's compiled step programs
// (zero unless Compiled).
func (m *CausalLM) CompileStats() compile.Stats {
	var st compile.Stats
	for _, f := range []*compile.Function{m.compiledLast, m.compiledAll, m.compiledPaged} {
		if f == nil {
			continue
		}
		s := f.Stats()
		st.Calls += s.Calls
		st.Traces += s.Traces
		st.Replays += s.Replays
		st.Programs += s.Programs
		st.TraceTime += s.TraceTime
		st.CompileTime += s.CompileTime
		st.RunTime += s.RunTime
	}
	return st
}
