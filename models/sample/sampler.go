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
	keep   []uint8   // 1: the candidate survives the current filter
	region []uint64  // top-p region to sort: sortable key<<32 | candidate position
	mass   [nBuckets]float64
	hist   expHist

	ready bool // made by New, so p is valid

	sum float64 // Σ w over cand after filtering, in cand order
	lo  float32 // smallest candidate logit, set by weigh
}

// New returns a Sampler for p, or the error of p.Validate.
func New(p Params) (*Sampler, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &Sampler{p: p, ready: true}, nil
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
	if last < 0 { // not reachable: the largest logit survives with weight 1
		return 0, fmt.Errorf("%w: no token has a positive probability", ErrInvalidInput)
	}
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
	s.keep = make([]uint8, v)
	s.region = make([]uint64, 0, v)
}

// badLogit is the error for a NaN or +Inf logit.
func badLogit(i int, l float32) error {
	if l != l {
		return fmt.Errorf("%w: logits[%d] is NaN", ErrInvalidInput, i)
	}
	return fmt.Errorf("%w: logits[%d] is +Inf", ErrInvalidInput, i)
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
//
// One pass over the vocabulary validates the logits, applies the
// temperature, finds the maximum and (without top-k) collects the
// candidates. The penalties touch only the ids in prompt and generated, so
// they are applied afterwards to those entries, recomputed from the original
// logit in the documented order (penalties, then temperature); elementwise
// float32 operations make that identical to applying them first. Top-k adds
// one more pass.
func (s *Sampler) run(logits []float32, prompt, generated []int) (int, error) {
	if s == nil || !s.ready {
		return 0, fmt.Errorf("%w: the Sampler was not made by New", ErrInvalidParams)
	}
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
	greedy := p.IsGreedy()
	topK := !greedy && p.TopK > 0 && p.TopK < v
	div := !greedy && p.Temperature != 1
	t := float32(p.Temperature)
	negInf := float32(math.Inf(-1))

	// Pass over the vocabulary.
	x := s.x[:v]
	m, bi := negInf, -1
	cand := s.cand[:0]
	collect := !greedy && !topK
	if !div && !collect { // greedy, or top-k at temperature 1
		for i, l := range logits {
			if !(l <= math.MaxFloat32) {
				return 0, badLogit(i, l)
			}
			x[i] = l
			if l > m {
				m, bi = l, i
			}
		}
	} else {
		for i, l := range logits {
			if !(l <= math.MaxFloat32) {
				return 0, badLogit(i, l)
			}
			if div {
				l /= t
			}
			x[i] = l
			if l > m {
				m, bi = l, i
			}
			if collect && l != negInf {
				cand = append(cand, int32(i))
			}
		}
	}

	// Penalties on the ids that occur. A penalized -Inf stays -Inf; a
	// finite logit that overflows to -Inf stays a candidate with weight 0,
	// which changes no result.
	if rep || pf {
		s.epoch++
		if s.epoch == 0 {
			clear(s.stamp)
			s.epoch = 1
		}
		if pf {
			for _, id := range generated {
				if id < v {
					s.count[id]++
				}
			}
		}
		pen := float32(p.RepetitionPenalty)
		freq, pres := float32(p.FrequencyPenalty), float32(p.PresencePenalty)
		rescan := false
		apply := func(id int) {
			if id >= v || s.stamp[id] == s.epoch {
				return
			}
			s.stamp[id] = s.epoch
			// 1. Repetition penalty (transformers), once per distinct id
			// of prompt+generated, like torch.where(score < 0,
			// score*pen, score/pen).
			l := logits[id]
			if rep {
				if l < 0 {
					l *= pen
				} else {
					l /= pen
				}
			}
			// 2. Frequency then presence penalty (vLLM), on generated
			// only: logits -= freq*counts; logits -= presence*(counts > 0).
			if c := s.count[id]; c > 0 {
				l -= float32(freq * float32(c))
				l -= pres
			}
			// 4. Temperature.
			if div {
				l /= t
			}
			if x[id] == m || l >= m {
				rescan = true // the maximum (or its first index) may move
			}
			x[id] = l
		}
		if rep {
			for _, id := range prompt {
				apply(id)
			}
		}
		for _, id := range generated {
			apply(id)
		}
		if pf {
			for _, id := range generated {
				if id < v {
					s.count[id] = 0
				}
			}
		}
		if rescan {
			m, bi = negInf, -1
			for i, l := range x {
				if l > m {
					m, bi = l, i
				}
			}
		}
	}

	// 3. Greedy: the first index of the largest logit.
	if greedy {
		if bi < 0 {
			return 0, fmt.Errorf("%w: every logit is -Inf", ErrInvalidInput)
		}
		return bi, nil
	}
	if math.IsInf(float64(m), 1) {
		return 0, fmt.Errorf("%w: a logit overflows to +Inf after the penalties and temperature %v", ErrInvalidInput, p.Temperature)
	}
	if bi < 0 {
		return 0, fmt.Errorf("%w: every logit is -Inf", ErrInvalidInput)
	}

	// 5. Top-k: keep the logits ≥ the k-th largest.
	if topK {
		cand = s.topK(x, p.TopK, cand)
	}
	s.cand = cand
	s.weigh(m)

	// 6. Top-p.
	if p.TopP < 1 {
		s.topP(m)
	}
	// 7. Min-p.
	if p.MinP > 0 {
		s.minP()
	}
	return 0, nil
}

// weigh sets s.w to exp(x - m) for s.cand, s.sum to their sum and s.lo to
// the smallest candidate logit.
func (s *Sampler) weigh(m float32) {
	x, w := s.x, s.w[:len(s.cand)]
	m64 := float64(m)
	sum := 0.0
	lo := m
	for j, i := range s.cand {
		l := x[i]
		lo = min(lo, l)
		e := expNeg(float64(l) - m64)
		w[j] = e
		sum += e
	}
	s.sum, s.lo = sum, lo
}

// filter keeps the candidates whose keep flag is 1, in order, with their
// weights, and recomputes s.sum. It is branch-free: the verdicts follow token
// ids, which is no order a branch predictor can learn.
func (s *Sampler) filter() {
	n := 0
	sum := 0.0
	keep, w := s.keep[:len(s.cand)], s.w[:len(s.cand)]
	for j, i := range s.cand {
		k := keep[j]
		s.cand[n] = i
		s.w[n] = w[j]
		sum += w[j] * float64(k) // adding +0 leaves the sum unchanged
		n += int(k)
	}
	s.cand = s.cand[:n]
	s.sum = sum
}

// b2u returns 1 for true and 0 for false.
func b2u(b bool) uint8 {
	var u uint8
	if b {
		u = 1
	}
	return u
}

// minP drops the candidates whose probability is below MinP times the
// largest, computed in float32 as transformers does: probs < min_p*max(probs)
// (probabilities are the float32 rounding of weight × (1/sum); the maximum
// has weight exactly 1).
func (s *Sampler) minP() {
	inv := 1 / s.sum
	cut := float32(float32(s.p.MinP) * float32(inv))
	keep := s.keep[:len(s.cand)]
	for j, e := range s.w[:len(s.cand)] {
		keep[j] = b2u(float32(e*inv) >= cut)
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

// topK appends to cand, in ascending order, the finite entries of x that
// are ≥ the k-th largest value of x (counting repeated values), for
// 0 < k < len(x).
func (s *Sampler) topK(x []float32, k int, cand []int32) []int32 {
	var thr float32
	if k <= topKHeapMax {
		// One pass: a min-heap of the k largest seen so far; every entry ≥
		// the heap's minimum when visited is a possible survivor (the
		// threshold only rises), so it is collected and re-checked below.
		if cap(s.heap) < k {
			s.heap = make([]float32, 0, k)
		}
		h := s.heap[:k]
		copy(h, x[:k])
		for i := k/2 - 1; i >= 0; i-- {
			siftDown(h, i)
		}
		for i := range k {
			cand = append(cand, int32(i))
		}
		root := h[0]
		for i, l := range x[k:] {
			if l >= root {
				cand = append(cand, int32(k+i))
				if l > root {
					h[0] = l
					siftDown(h, 0)
					root = h[0]
				}
			}
		}
		thr = root
	} else {
		if cap(s.keys) < len(x) {
			s.keys = make([]uint32, len(x))
		}
		thr = kthRadix(x, k, s.keys[:len(x)])
		for i := range x {
			cand = append(cand, int32(i))
		}
	}
	n := 0
	negInf := float32(math.Inf(-1))
	for _, i := range cand {
		if l := x[i]; l >= thr && l != negInf {
			cand[n] = i
			n++
		}
	}
	return cand[:n]
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
	var base wideSum
	region := s.region[:0]
	if n <= topPSortMax {
		inv := 1 / s.sum
		for j, i := range cand {
			pr[j] = float32(s.w[j] * inv)
			keep[j] = 0
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
		keep[uint32(e)] = 1
		kept = true
	}
	s.region = region
	if !kept && !slices.Contains(keep, 1) {
		// min_tokens_to_keep=1: keep the last in ascending (logit, id)
		// order, the largest logit with the highest id.
		for j := n - 1; j >= 0; j-- {
			if x[cand[j]] == m {
				keep[j] = 1
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
	pr, keep, bkt, w := s.pr[:n], s.keep[:n], s.bkt[:n], s.w[:n]
	// Logits more than 128 below the maximum have float32 probability 0,
	// so the buckets span at most that much.
	span := min(float64(m)-float64(s.lo), 128)
	scale := 0.0
	if span > 0 {
		scale = nBuckets / span
	}
	s.mass = [nBuckets]float64{}
	m64, inv := float64(m), 1/s.sum
	for j, i := range cand {
		p := float32(w[j] * inv)
		pr[j] = p
		f := (m64 - float64(x[i])) * scale
		b := nBuckets - 1
		if f < nBuckets-1 {
			b = int(f)
		}
		bkt[j] = uint16(b)
		s.mass[b] += float64(p)
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
	if regHi < 0 {
		// Every bucket is below the cut (not reachable with the float32
		// probabilities summing to 1 within 1e-7, kept for safety): all
		// are removed and topP keeps the largest.
		regLo, regHi = 0, -1
	}
	for j, i := range cand {
		b := int(bkt[j])
		keep[j] = b2u(b < regLo)
		// Branch-free for the removed and kept buckets: adding a zero
		// probability changes no sum.
		below := b > regHi
		s.hist.add(pr[j] * float32(b2u(below)))
		if !below && b >= regLo {
			region = append(region, uint64(sortKey(x[i]))<<32|uint64(j))
		}
	}
	s.hist.fold(base)
	return region
}
