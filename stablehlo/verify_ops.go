package stablehlo

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Shape rules Verify applies to the common ops (a subset of the StableHLO
// specification's constraints; ops without a rule are checked only for
// SSA and type consistency).

var elementwise = map[string]bool{}

func init() {
	for _, n := range strings.Fields(`abs add and atan2 cbrt ceil cosine divide exponential
		exponential_minus_one floor log log_plus_one logistic maximum minimum multiply negate not or
		power remainder round_nearest_afz round_nearest_even rsqrt shift_left shift_right_arithmetic
		shift_right_logical sign sine sqrt subtract tan tanh xor`) {
		elementwise["stablehlo."+n] = true
	}
	for _, n := range []string{"chlo.erf", "chlo.erfc", "chlo.erf_inv"} {
		elementwise[n] = true
	}
}

// intList parses "array<i64: 1, 2>", "array<i64>" or "[1, 2]".
func intList(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "array<i64>" || s == "[]":
		return []int{}, nil
	case strings.HasPrefix(s, "array<i64:") && strings.HasSuffix(s, ">"):
		s = s[len("array<i64:") : len(s)-1]
	case strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]"):
		s = s[1 : len(s)-1]
	default:
		return nil, fmt.Errorf("not an integer list: %q", s)
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("bad integer %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// scalarInt parses "3 : i64".
func scalarInt(s string) (int, error) {
	f, _, _ := strings.Cut(s, ":")
	return strconv.Atoi(strings.TrimSpace(f))
}

func needAttr(attrs map[string]string, k string) (string, error) {
	v, ok := attrs[k]
	if !ok {
		return "", fmt.Errorf("missing attribute %s", k)
	}
	return v, nil
}

func listAttr(attrs map[string]string, k string) ([]int, error) {
	v, err := needAttr(attrs, k)
	if err != nil {
		return nil, err
	}
	l, err := intList(v)
	if err != nil {
		return nil, fmt.Errorf("attribute %s: %w", k, err)
	}
	return l, nil
}

// dnList extracts "key = [..]" from a #stablehlo.dot<...>-style attribute.
func dnList(s, key string) ([]int, error) {
	i := strings.Index(s, key+" = [")
	if i < 0 {
		return []int{}, nil
	}
	rest := s[i+len(key)+3:]
	j := strings.IndexByte(rest, ']')
	if j < 0 {
		return nil, fmt.Errorf("unterminated %s", key)
	}
	return intList(rest[:j+1])
}

func checkOp(name string, ins, outs []tensorType, attrs map[string]string, regions, regionRets [][]tensorType) error {
	sameShape := func(a, b tensorType) bool { return slices.Equal(a.shape, b.shape) }
	switch {
	case elementwise[name]:
		if len(outs) != 1 || len(ins) == 0 {
			return fmt.Errorf("elementwise op needs operands and one result")
		}
		for i, t := range ins {
			if t.String() != outs[0].String() {
				return fmt.Errorf("operand %d is %s, result %s: elementwise operands and result must have one type", i, t, outs[0])
			}
		}
	}
	switch name {
	case "stablehlo.compare":
		if len(ins) != 2 || ins[0].String() != ins[1].String() {
			return fmt.Errorf("operands must have one type, got %s", typesString(ins))
		}
		if !sameShape(ins[0], outs[0]) || outs[0].elem != "i1" {
			return fmt.Errorf("result %s must be i1 of the operands' shape %v", outs[0], ins[0].shape)
		}
		if _, err := needAttr(attrs, "comparison_direction"); err != nil {
			return err
		}
	case "stablehlo.select":
		if len(ins) != 3 {
			return fmt.Errorf("takes 3 operands")
		}
		if ins[0].elem != "i1" || (len(ins[0].shape) > 0 && !sameShape(ins[0], ins[1])) {
			return fmt.Errorf("predicate %s must be i1 and scalar or of the operands' shape", ins[0])
		}
		if ins[1].String() != ins[2].String() || ins[1].String() != outs[0].String() {
			return fmt.Errorf("branches %s, %s and result %s must have one type", ins[1], ins[2], outs[0])
		}
	case "stablehlo.clamp":
		if len(ins) != 3 || ins[1].String() != outs[0].String() {
			return fmt.Errorf("operand and result types differ")
		}
	case "stablehlo.convert", "stablehlo.bitcast_convert":
		if !sameShape(ins[0], outs[0]) {
			return fmt.Errorf("shape %v changes to %v", ins[0].shape, outs[0].shape)
		}
	case "stablehlo.reshape":
		if ins[0].numel() != outs[0].numel() || ins[0].elem != outs[0].elem {
			return fmt.Errorf("cannot reshape %s to %s", ins[0], outs[0])
		}
	case "stablehlo.constant":
		v, err := needAttr(attrs, "value")
		if err != nil {
			return err
		}
		i := strings.LastIndex(v, ": ")
		if i < 0 || strings.TrimSpace(v[i+2:]) != outs[0].String() {
			return fmt.Errorf("value %q does not have the result type %s", v, outs[0])
		}
	case "stablehlo.iota":
		d, err := needAttr(attrs, "iota_dimension")
		if err != nil {
			return err
		}
		n, err := scalarInt(d)
		if err != nil || n < 0 || n >= len(outs[0].shape) {
			return fmt.Errorf("iota_dimension %q out of range for %s", d, outs[0])
		}
	case "stablehlo.broadcast_in_dim":
		dims, err := listAttr(attrs, "broadcast_dimensions")
		if err != nil {
			return err
		}
		if len(dims) != len(ins[0].shape) || ins[0].elem != outs[0].elem {
			return fmt.Errorf("broadcast_dimensions %v for operand %s", dims, ins[0])
		}
		for i, d := range dims {
			if d < 0 || d >= len(outs[0].shape) || (ins[0].shape[i] != 1 && ins[0].shape[i] != outs[0].shape[d]) {
				return fmt.Errorf("operand dim %d (%d) cannot broadcast to result dim %d of %s", i, ins[0].shape[i], d, outs[0])
			}
		}
	case "stablehlo.transpose":
		perm, err := listAttr(attrs, "permutation")
		if err != nil {
			return err
		}
		if len(perm) != len(ins[0].shape) || len(outs[0].shape) != len(perm) {
			return fmt.Errorf("permutation %v for %s", perm, ins[0])
		}
		for i, d := range perm {
			if d < 0 || d >= len(perm) || outs[0].shape[i] != ins[0].shape[d] {
				return fmt.Errorf("permutation %v of %s does not give %s", perm, ins[0], outs[0])
			}
		}
	case "stablehlo.concatenate":
		d, err := needAttr(attrs, "dimension")
		if err != nil {
			return err
		}
		dim, err := scalarInt(d)
		if err != nil || dim < 0 || dim >= len(outs[0].shape) {
			return fmt.Errorf("dimension %q out of range", d)
		}
		sum := 0
		for i, t := range ins {
			if len(t.shape) != len(outs[0].shape) || t.elem != outs[0].elem {
				return fmt.Errorf("operand %d %s does not match result %s", i, t, outs[0])
			}
			for k := range t.shape {
				if k != dim && t.shape[k] != outs[0].shape[k] {
					return fmt.Errorf("operand %d %s does not match result %s off dimension %d", i, t, outs[0], dim)
				}
			}
			sum += t.shape[dim]
		}
		if sum != outs[0].shape[dim] {
			return fmt.Errorf("operands sum to %d along dimension %d, result has %d", sum, dim, outs[0].shape[dim])
		}
	case "stablehlo.slice":
		st, err := listAttr(attrs, "start_indices")
		if err != nil {
			return err
		}
		li, err := listAttr(attrs, "limit_indices")
		if err != nil {
			return err
		}
		sd, err := listAttr(attrs, "strides")
		if err != nil {
			return err
		}
		r := len(ins[0].shape)
		if len(st) != r || len(li) != r || len(sd) != r || len(outs[0].shape) != r {
			return fmt.Errorf("slice attributes do not match rank %d", r)
		}
		for i := 0; i < r; i++ {
			if st[i] < 0 || li[i] < st[i] || li[i] > ins[0].shape[i] || sd[i] <= 0 {
				return fmt.Errorf("bad slice [%d:%d:%d] of dimension %d (size %d)", st[i], li[i], sd[i], i, ins[0].shape[i])
			}
			if n := (li[i] - st[i] + sd[i] - 1) / sd[i]; n != outs[0].shape[i] {
				return fmt.Errorf("slice of dimension %d has %d elements, result says %d", i, n, outs[0].shape[i])
			}
		}
	case "stablehlo.reduce":
		dims, err := listAttr(attrs, "dimensions")
		if err != nil {
			return err
		}
		n := len(ins) / 2
		if len(ins)%2 != 0 || len(outs) != n || len(regions) != 1 {
			return fmt.Errorf("%d operands, %d results and %d regions do not form a reduction", len(ins), len(outs), len(regions))
		}
		for i := 0; i < n; i++ {
			var want []int
			for d, s := range ins[i].shape {
				if !slices.Contains(dims, d) {
					want = append(want, s)
				}
			}
			if !slices.Equal(want, outs[i].shape) && !(len(want) == 0 && len(outs[i].shape) == 0) {
				return fmt.Errorf("reducing %s over %v gives shape %v, result says %s", ins[i], dims, want, outs[i])
			}
			if len(ins[n+i].shape) != 0 || ins[n+i].elem != ins[i].elem {
				return fmt.Errorf("init value %s must be a scalar of %s's element type", ins[n+i], ins[i])
			}
		}
		if len(regions[0]) != 2*n || len(regionRets[0]) != n {
			return fmt.Errorf("body takes %d arguments and returns %d values, want %d and %d", len(regions[0]), len(regionRets[0]), 2*n, n)
		}
	case "stablehlo.dot_general":
		dn, err := needAttr(attrs, "dot_dimension_numbers")
		if err != nil {
			return err
		}
		var l [4][]int
		for i, k := range []string{"lhs_batching_dimensions", "rhs_batching_dimensions", "lhs_contracting_dimensions", "rhs_contracting_dimensions"} {
			if l[i], err = dnList(dn, k); err != nil {
				return err
			}
		}
		lhs, rhs := ins[0], ins[1]
		if len(l[0]) != len(l[1]) || len(l[2]) != len(l[3]) {
			return fmt.Errorf("unpaired dimension numbers %s", dn)
		}
		inRange := func(ds []int, t tensorType) bool {
			return !slices.ContainsFunc(ds, func(d int) bool { return d < 0 || d >= len(t.shape) })
		}
		if !inRange(l[0], lhs) || !inRange(l[2], lhs) || !inRange(l[1], rhs) || !inRange(l[3], rhs) {
			return fmt.Errorf("dimension numbers %s out of range for %s and %s", dn, lhs, rhs)
		}
		var want []int
		for i, d := range l[0] {
			if lhs.shape[d] != rhs.shape[l[1][i]] {
				return fmt.Errorf("batch dimensions %d and %d differ", d, l[1][i])
			}
			want = append(want, lhs.shape[d])
		}
		for i, d := range l[2] {
			if lhs.shape[d] != rhs.shape[l[3][i]] {
				return fmt.Errorf("contracting dimensions %d and %d differ", d, l[3][i])
			}
		}
		for d, s := range lhs.shape {
			if !slices.Contains(l[0], d) && !slices.Contains(l[2], d) {
				want = append(want, s)
			}
		}
		for d, s := range rhs.shape {
			if !slices.Contains(l[1], d) && !slices.Contains(l[3], d) {
				want = append(want, s)
			}
		}
		if want == nil {
			want = []int{}
		}
		if !slices.Equal(want, outs[0].shape) {
			return fmt.Errorf("result shape %v, dimension numbers give %v", outs[0].shape, want)
		}
	}
	return nil
}
