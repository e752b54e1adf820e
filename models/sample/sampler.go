package sample

import (
	"fmt"
	"math"
	"slices"
)

// Tuning thresholds; variables so that tests can force each path.
var (
	// topKHeapMax is the largest TopK found with a size-k heap in one pass;
	// larger ones use a three-pass radix select.
	topKHeapMax = 256
	// topPSortMax is the largest candidate set the top-p cut sorts whole;
	// larger ones are first narrowed with a logit histogram.
	topPSortMax = 1024
)

// nBuckets is the number of logit buckets of the top-p histogram.
const nBuckets = 4096

// Sampler picks next tokens according to its Params. It keeps scratch
// buffers sized to the vocabulary and reuses them, so after the first call
// with a given vocabulary size Next and Process do not allocate (Process
// allocates its result only when dst is too small). A Sampler is not safe for
// concurrent use; use one per goroutine.
type Sampler struct {
	p Params

	x      []float32 // working logits (vocabulary-sized)
	stamp  []uint32  // stamp[id] == epoch: id already penalized this call
	epoch  uint32
	count  []int32   // occurrences in generated (zero between calls)
	heap   []float32 // top-k heap
	keys   []uint32  // top-k radix-select keys
	cand   []int32   // candidate token ids, ascending
	w      []float64 // exp(x - max) of each candidate
	pr     []float32 // float32 probability of each candidate (top-p, min-p)
	bkt    []uint16  // top-p histogram bucket of each candidate
	keep   []bool    // top-p verdict of each candidate
	region []uint64  // top-p region to sort: sortable key<<32 | candidate position
	mass   [nBuckets]float64
	hist   expHist

	sum float64 // Σ w over cand after filtering, in cand order
}

// New returns a Sampler for p, or the error of p.Validate.
func New(p Params) (*Sampler, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &Sampler{p: p}, nil
}

// Params returns the parameters s was made with.
func (s *Sampler) Params() Params { return s.p }

// Next returns the next token for one sequence.
//
// logits are the scores of the last position (one per vocabulary entry;
// -Inf marks a token that must not be chosen, NaN and +Inf are errors).
// prompt are the ids the model was given and generated the ids produced so
// far; the repetition penalty reads both, the presence and frequency
// penalties only generated, and the random draw is indexed by
// len(generated). The ids are read only when a penalty that uses them is
// enabled; a negative id is then an error, and ids ≥ len(logits) are ignored
// as transformers does (they cannot be generated, for models whose embedding
// table is larger than their output layer). logits, prompt and generated are
// not modified.
func (s *Sampler) Next(logits []float32, prompt, generated []int) (int, error) {
	tok, err := s.run(logits, prompt, generated)
	if err != nil || s.p.IsGreedy() {
		return tok, err
	}
	target := uniform(s.p.Seed, uint64(len(generated))) * s.sum
	acc := 0.0
	last := -1
	for j, e := range s.w[:len(s.cand)] {
		if e == 0 {
			continue
		}
		acc += e
		if acc > target {
			return int(s.cand[j]), nil
		}
		last = j
	}
	// Only reachable when u·sum rounds up to sum.
	return int(s.cand[last]), nil
}

// Process returns the scores transformers' generate would sample from: the
// logits after the penalties, temperature, top-k, top-p and min-p, with -Inf
// for every filtered token (in greedy mode, the penalized logits). It writes
// into dst when it has room for len(logits) values and allocates otherwise.
// The arguments are those of Next.
func (s *Sampler) Process(dst, logits []float32, prompt, generated []int) ([]float32, error) {
	if _, err := s.run(logits, prompt, generated); err != nil {
		return dst, err
	}
	v := len(logits)
	if cap(dst) < v {
		dst = make([]float32, v)
	}
	dst = dst[:v]
	if s.p.IsGreedy() {
		copy(dst, s.x[:v])
		return dst, nil
	}
	negInf := float32(math.Inf(-1))
	for i := range dst {
		dst[i] = negInf
	}
	for _, i := range s.cand {
		dst[i] = s.x[i]
	}
	return dst, nil
}

// grow sizes the vocabulary-sized scratch for v tokens.
func (s *Sampler) grow(v int) {
	if len(s.x) >= v {
		return
	}
	s.x = make([]float32, v)
	s.stamp = make([]uint32, v)
	s.epoch = 0
	s.count = make([]int32, v)
	s.cand = make([]int32, 0, v)
	s.w = make([]float64, v)
	s.pr = make([]float32, v)
	s.bkt = make([]uint16, v)
	s.keep = make([]bool, v)
	s.region = make([]uint64, 0, v)
}

// checkIDs reports the first negative id of ids.
func checkIDs(name string, ids []int) error {
	for i, id := range ids {
		if id < 0 {
			return fmt.Errorf("%w: %s[%d] = %d is a negative token id", ErrInvalidInput, name, i, id)
		}
	}
	return nil
}

// run applies the pipeline to logits. In greedy mode it returns the chosen
// token; otherwise it leaves the surviving tokens in s.cand (ascending), their
// weights exp(x - max) in s.w and the weights' sum in s.sum.
func (s *Sampler) run(logits []float32, prompt, generated []int) (int, error) {
	v := len(logits)
	if v == 0 {
		return 0, fmt.Errorf("%w: empty logits", ErrInvalidInput)
	}
	if v > math.MaxInt32 {
		return 0, fmt.Errorf("%w: %d logits exceed the supported vocabulary size", ErrInvalidInput, v)
	}
	p := &s.p
	rep := p.RepetitionPenalty != 1
	pf := p.PresencePenalty != 0 || p.FrequencyPenalty != 0
	if rep {
		if err := checkIDs("prompt", prompt); err != nil {
			return 0, err
		}
	}
	if rep || pf {
		if err := checkIDs("generated", generated); err != nil {
			return 0, err
		}
	}
	s.grow(v)
	x := s.x[:v]
	for i, l := range logits {
		if !(l <= math.MaxFloat32) {
			if l != l {
				return 0, fmt.Errorf("%w: logits[%d] is NaN", ErrInvalidInput, i)
			}
			return 0, fmt.Errorf("%w: logits[%d] is +Inf", ErrInvalidInput, i)
		}
		x[i] = l
	}

	// 1. Repetition penalty (transformers), once per distinct id of
	// prompt+generated, in float32 like torch.where(score < 0, score*pen,
	// score/pen).
	if rep {
		s.epoch++
		if s.epoch == 0 {
			clear(s.stamp)
			s.epoch = 1
		}
		pen := float32(p.RepetitionPenalty)
		for _, ids := range [2][]int{prompt, generated} {
			for _, id := range ids {
				if id >= v || s.stamp[id] == s.epoch {
					continue
				}
				s.stamp[id] = s.epoch
				if l := x[id]; l < 0 {
					x[id] = l * pen
				} else {
					x[id] = l / pen
				}
			}
		}
	}
	// 2. Frequency then presence penalty (vLLM), on generated only, in
	// float32 like logits -= freq*counts; logits -= presence*(counts > 0).
	if pf {
		for _, id := range generated {
			if id < v {
				s.count[id]++
			}
		}
		freq, pres := float32(p.FrequencyPenalty), float32(p.PresencePenalty)
		for _, id := range generated {
			if id >= v {
				continue
			}
			c := s.count[id]
			if c == 0 {
				continue // already applied
			}
			s.count[id] = 0
			l := x[id] - float32(freq*float32(c))
			x[id] = l - pres
		}
	}

	if p.IsGreedy() {
		best, bi := float32(math.Inf(-1)), -1
		for i, l := range x {
			if l > best {
				best, bi = l, i
			}
		}
		if bi < 0 {
			return 0, fmt.Errorf("%w: every logit is -Inf", ErrInvalidInput)
		}
		return bi, nil
	}

	// 3. Temperature, and the maximum.
	m := float32(math.Inf(-1))
	if p.Temperature != 1 {
		t := float32(p.Temperature)
		for i, l := range x {
			l /= t
			x[i] = l
			m = max(m, l)
		}
	} else {
		for _, l := range x {
			m = max(m, l)
		}
	}
	if math.IsInf(float64(m), 1) {
		return 0, fmt.Errorf("%w: temperature %v overflows a logit to +Inf", ErrInvalidInput, p.Temperature)
	}
	if math.IsInf(float64(m), -1) {
		return 0, fmt.Errorf("%w: every logit is -Inf", ErrInvalidInput)
	}

	// 4. Top-k: drop every logit below the k-th largest.
	thr := float32(math.Inf(-1))
	if p.TopK > 0 && p.TopK < v {
		thr = s.kth(x, p.TopK)
	}
	cand := s.cand[:0]
	negInf := float32(math.Inf(-1))
	for i, l := range x {
		if l >= thr && l != negInf {
			cand = append(cand, int32(i))
		}
	}
	s.cand = cand
	s.weigh(m)

	// 5. Top-p.
	if p.TopP < 1 {
		s.topP(m)
	}
	// 6. Min-p.
	if p.MinP > 0 {
		s.minP()
	}
	return 0, nil
}

// weigh sets s.w to exp(x - m) for s.cand and s.sum to their sum.
func (s *Sampler) weigh(m float32) {
	x, w := s.x, s.w[:len(s.cand)]
	m64 := float64(m)
	sum := 0.0
	for j, i := range s.cand {
		e := expNeg(float64(x[i]) - m64)
		w[j] = e
		sum += e
	}
	s.sum = sum
}

// filter keeps the candidates whose keep flag is set, in order, with their
// weights, and recomputes s.sum.
func (s *Sampler) filter() {
	n := 0
	sum := 0.0
	for j, i := range s.cand {
		if s.keep[j] {
			s.cand[n] = i
			s.w[n] = s.w[j]
			sum += s.w[j]
			n++
		}
	}
	s.cand = s.cand[:n]
	s.sum = sum
}

// minP drops the candidates whose probability is below MinP times the
// largest, computed in float32 as transformers does: probs < min_p*max(probs).
func (s *Sampler) minP() {
	top := float32(1 / s.sum) // the maximum has weight exactly 1
	cut := float32(float32(s.p.MinP) * top)
	for j := range s.cand {
		s.keep[j] = float32(s.w[j]/s.sum) >= cut
	}
	s.filter()
}

// sortKey maps a float32 to a uint32 whose unsigned order is the float order,
// with -0 and +0 equal.
func sortKey(f float32) uint32 {
	if f == 0 {
		f = 0
	}
	b := math.Float32bits(f)
	if b>>31 != 0 {
		return ^b
	}
	return b | 1<<31
}

// fromSortKey inverts sortKey.
func fromSortKey(k uint32) float32 {
	if k>>31 != 0 {
		return math.Float32frombits(k &^ (1 << 31))
	}
	return math.Float32frombits(^k)
}

// kth returns the k-th largest value of x (counting repeated values), for
// 0 < k < len(x).
func (s *Sampler) kth(x []float32, k int) float32 {
	if k <= topKHeapMax {
		return kthHeap(x, k, &s.heap)
	}
	if cap(s.keys) < len(x) {
		s.keys = make([]uint32, len(x))
	}
	return kthRadix(x, k, s.keys[:len(x)])
}

// kthHeap finds the k-th largest value with a min-heap of the k largest seen.
func kthHeap(x []float32, k int, buf *[]float32) float32 {
	if cap(*buf) < k {
		*buf = make([]float32, 0, k)
	}
	h := (*buf)[:k]
	copy(h, x[:k])
	for i := k/2 - 1; i >= 0; i-- {
		siftDown(h, i)
	}
	root := h[0]
	for _, l := range x[k:] {
		if l > root {
			h[0] = l
			siftDown(h, 0)
			root = h[0]
		}
	}
	return root
}

func siftDown(h []float32, i int) {
	n := len(h)
	for {
		c := 2*i + 1
		if c >= n {
			return
		}
		if c+1 < n && h[c+1] < h[c] {
			c++
		}
		if !(h[c] < h[i]) {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// kthRadix finds the k-th largest value by selecting on 11, 11 and 10 bits
// of the sortable keys, compacting the keys of the selected bucket after
// each pass: O(len(x)) whatever the data.
func kthRadix(x []float32, k int, keys []uint32) float32 {
	for i, l := range x {
		keys[i] = sortKey(l)
	}
	n := len(keys)
	for _, pass := range [3]struct{ shift, width uint }{{21, 11}, {10, 11}, {0, 10}} {
		var cnt [2048]int
		mask := uint32(1)<<pass.width - 1
		for _, key := range keys[:n] {
			cnt[key>>pass.shift&mask]++
		}
		b := int(mask)
		for ; b > 0 && cnt[b] < k; b-- {
			k -= cnt[b]
		}
		m := 0
		for _, key := range keys[:n] {
			if key>>pass.shift&mask == uint32(b) {
				keys[m] = key
				m++
			}
		}
		n = m
	}
	return fromSortKey(keys[0])
}

// topP applies transformers' TopPLogitsWarper to the candidates (m is their
// largest logit): with the candidates sorted ascending by (logit, id) and p
// their float32 softmax, a candidate is removed when the float32 rounding of
// the sum of p over it and every candidate before it is ≤ float32(1 - top_p);
// the last (largest) is always kept. Non-candidates have p = 0 and do not
// change any sum. Sums are exact (see exactsum.go).
//
// Small sets are sorted whole. Larger ones are bucketed by logit first:
// buckets whose whole cumulative range is clearly below (or above) the
// threshold are removed (kept) without sorting, and only the few buckets
// around it are sorted, starting from the exact sum of everything below.
func (s *Sampler) topP(m float32) {
	n := len(s.cand)
	x, cand := s.x, s.cand
	thr := float32(1 - s.p.TopP)
	pr, keep := s.pr[:n], s.keep[:n]
	for j := range cand {
		pr[j] = float32(s.w[j] / s.sum)
	}
	var base wideSum
	region := s.region[:0]
	if n <= topPSortMax {
		for j, i := range cand {
			keep[j] = false
			region = append(region, uint64(sortKey(x[i]))<<32|uint64(j))
		}
	} else {
		region = s.bucketTopP(m, thr, &base, region)
	}
	slices.Sort(region)
	acc := base
	first := len(region)
	for r, e := range region {
		acc.add(pr[uint32(e)])
		if acc.float32() > thr {
			first = r
			break
		}
	}
	kept := false
	for _, e := range region[first:] {
		keep[uint32(e)] = true
		kept = true
	}
	s.region = region
	if !kept && !slices.Contains(keep, true) {
		// min_tokens_to_keep=1: keep the last in ascending (logit, id)
		// order, the largest logit with the highest id.
		for j := n - 1; j >= 0; j-- {
			if x[cand[j]] == m {
				keep[j] = true
				break
			}
		}
	}
	s.filter()
}

// bucketTopP sorts the candidates into nBuckets logit buckets (0 holds the
// largest logits), marks the buckets whose cumulative probability range lies
// clearly on one side of thr, adds the exact probability of every removed
// candidate to base, and appends the undecided candidates to region.
//
// The ranges use float64 estimates of the bucket sums, which are within
// about 1e-10 of the exact sums; "clearly" means by more than delta = 1e-6,
// which is also more than half a float32 ulp of any threshold ≤ 1, so a
// candidate outside the undecided buckets gets the same verdict as in the
// full sort.
func (s *Sampler) bucketTopP(m, thr float32, base *wideSum, region []uint64) []uint64 {
	const delta = 1e-6
	x, cand := s.x, s.cand
	n := len(cand)
	pr, keep, bkt := s.pr[:n], s.keep[:n], s.bkt[:n]
	lo := m
	for _, i := range cand {
		lo = min(lo, x[i])
	}
	// Logits more than 128 below the maximum have float32 probability 0,
	// so the buckets span at most that much.
	span := min(float64(m)-float64(lo), 128)
	scale := 0.0
	if span > 0 {
		scale = nBuckets / span
	}
	s.mass = [nBuckets]float64{}
	for j, i := range cand {
		f := (float64(m) - float64(x[i])) * scale
		b := nBuckets - 1
		if f < nBuckets-1 {
			b = int(f)
		}
		bkt[j] = uint16(b)
		s.mass[b] += float64(pr[j])
	}
	// Walk the buckets from the smallest logits up; cum is the estimated
	// sum of everything below the current bucket.
	t := float64(thr)
	regLo, regHi := -1, -1 // undecided buckets: [regLo, regHi]
	cum := 0.0
	for b := nBuckets - 1; b >= 0; b-- {
		start := cum
		cum += s.mass[b]
		if cum < t-delta {
			continue // removed
		}
		if start > t+delta {
			break // this bucket and all above it are kept
		}
		if regHi < 0 {
			regHi = b
		}
		regLo = b
	}
	s.hist.reset()
	for j, i := range cand {
		b := int(bkt[j])
		keep[j] = false
		switch {
		case regHi < 0 || b > regHi:
			s.hist.add(pr[j])
		case b < regLo:
			keep[j] = true
		default:
			region = append(region, uint64(sortKey(x[i]))<<32|uint64(j))
		}
	}
	s.hist.fold(base)
	return region
}
