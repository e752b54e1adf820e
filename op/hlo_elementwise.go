package op

// StableHLO emitters of the elementwise primitives. Inputs are broadcast to
// the output shape here; promotion is already explicit in the graph.

// operands broadcasts the inputs to out's shape and, where keep is false,
// converts them to out's element type.
func operands(b hb, in []HLOValue, out Meta, convert bool) []HLOValue {
	vs := make([]HLOValue, len(in))
	for i, x := range in {
		if convert {
			x = b.convert(x, HLOElem(out.DType))
		}
		vs[i] = b.bcastTo(x, out.Shape)
	}
	return vs
}

func init() {
	floatUnary := map[*Def]string{
		Cos: "stablehlo.cosine", Sin: "stablehlo.sine", Tan: "stablehlo.tan", Tanh: "stablehlo.tanh",
		Exp: "stablehlo.exponential", Expm1: "stablehlo.exponential_minus_one",
		Log: "stablehlo.log", Log1p: "stablehlo.log_plus_one",
		Sqrt: "stablehlo.sqrt", Rsqrt: "stablehlo.rsqrt", Sigmoid: "stablehlo.logistic",
		// CHLO: StableHLO's companion dialect of ops that legalize into
		// StableHLO (XLA expands them with polynomial approximations).
		Erf: "chlo.erf", Erfc: "chlo.erfc", Erfinv: "chlo.erf_inv",
	}
	for h, hlo := range floatUnary {
		DefStableHLO(h, emit1(func(b hb, in []HLOValue, out Meta, a Attrs) (HLOValue, error) {
			x := b.convert(in[0], HLOElem(out.DType))
			return b.op1(hlo, x.Type, nil, x), nil
		}))
	}
	// Rounding is the identity on integers.
	for h, hlo := range map[*Def]string{Ceil: "ceil", Floor: "floor", RoundNearestEven: "round_nearest_even"} {
		DefStableHLO(h, emit1(func(b hb, in []HLOValue, out Meta, a Attrs) (HLOValue, error) {
			if !isFloatElem(in[0].Type.Elem) {
				return in[0], nil
			}
			return b.un(hlo, in[0]), nil
		}))
	}
	DefStableHLO(Abs, emit1(func(b hb, in []HLOValue, out Meta, a Attrs) (HLOValue, error) {
		if isUnsignedElem(in[0].Type.Elem) {
			return in[0], nil
		}
		return b.un("abs", in[0]), nil
	}))
	DefStableHLO(Neg, emit1(func(b hb, in []HLOValue, out Meta, a Attrs) (HLOValue, error) {
		if in[0].Type.Elem == "i1" {
			return in[0], nil // -x wraps to x in one bit
		}
		return b.un("negate", in[0]), nil
	}))
	DefStableHLO(Sign, emit1(func(b hb, in []HLOValue, out Meta, a Attrs) (HLOValue, error) {
		x := in[0]
		switch {
		case x.Type.Elem == "i1":
			return x, nil
		case isUnsignedElem(x.Type.Elem):
			return b.convert(b.cmp("NE", x, b.like(x, int64(0))), x.Type.Elem), nil
		case isFloatElem(x.Type.Elem):
			// torch.sign(NaN) is 0; stablehlo.sign would return NaN.
			return b.sel(b.isnan(x), b.like(x, 0.0), b.un("sign", x)), nil
		}
		return b.un("sign", x), nil
	}))
	DefStableHLO(Signbit, emit1(func(b hb, in []HLOValue, out Meta, a Attrs) (HLOValue, error) {
		x := in[0]
		switch {
		case isUnsignedElem(x.Type.Elem):
			return b.konst(withElem(x.Type, "i1"), false), nil
		case isFloatElem(x.Type.Elem):
			ie := map[string]string{"f16": "i16", "bf16": "i16", "f32": "i32", "f64": "i64"}[x.Type.Elem]
			bits := b.op1("stablehlo.bitcast_convert", withElem(x.Type, ie), nil, x)
			return b.cmp("LT", bits, b.like(bits, int64(0))), nil
		}
		return b.cmp("LT", x, b.like(x, int64(0))), nil
	}))
	DefStableHLO(BitwiseNot, emit1(func(b hb, in []HLOValue, out Meta, a Attrs) (HLOValue, error) {
		return b.un("not", in[0]), nil
	}))

	// Binary arithmetic.
	alphaOp := func(h *Def, hlo string) {
		name := h.Name
		DefStableHLO(h, emit1(func(b hb, in []HLOValue, out Meta, a Attrs) (HLOValue, error) {
			v := operands(b, in, out, true)
			x, y := v[0], v[1]
			if x.Type.Elem == "i1" {
				if name == "sub" {
					return HLOValue{}, unsupported(name, "subtraction of bool tensors")
				}
				return b.bin("or", x, y), nil
			}
			if al, ok := a["alpha"]; ok && al != nil && scalarFloat(al) != 1 {
				y = b.bin("multiply", y, b.like(y, al))
			}
			return b.bin(hlo, x, y), nil
		}))
	}
	alphaOp(Add, "add")
	alphaOp(Sub, "subtract")
	boolOr := func(h *Def, hlo, boolHLO string) {
		DefStableHLO(h, emit1(func(b hb, in []HLOValue, out Meta, a Attrs) (HLOValue, error) {
			v := operands(b, in, out, true)
			if v[0].Type.Elem == "i1" && boolHLO != "" {
				return b.bin(boolHLO, v[0], v[1]), nil
			}
			return b.bin(hlo, v[0], v[1]), nil
		}))
	}
	boolOr(Mul, "multiply", "and")
	boolOr(Maximum, "maximum", "or") // NaN propagates (IEEE maximum)
	boolOr(Minimum, "minimum", "and")
	boolOr(Atan2, "atan2", "")
	boolOr(Fmod, "remainder", "") // C fmod: sign of the dividend
	boolOr(BitwiseAnd, "and", "")
	boolOr(BitwiseOr, "or", "")
	boolOr(BitwiseXor, "xor", "")
	boolOr(BitwiseLeftShift, "shift_left", "")
	DefStableHLO(BitwiseRightShift, emit1(func(b hb, in []HLOValue, out Meta, a Attrs) (HLOValue, error) {
		v := operands(b, in, out, true)
		if isUnsignedElem(v[0].Type.Elem) {
			return b.bin("shift_right_logical", v[0], v[1]), nil
		}
		return b.bin("shift_right_arithmetic", v[0], v[1]), nil
	}))
	DefStableHLO(Pow, emit1(func(b hb, in []HLOValue, out Meta, a Attrs) (HLOValue, error) {
		v := operands(b, in, out, true)
		x, y := v[0], v[1]
		p := b.bin("power", x, y)
		if isFloatElem(x.Type.Elem) || isUnsignedElem(x.Type.Elem) {
			return p, nil
		}
		// Negative integer exponents: 0, except 1 for base 1 and ±1 for base -1.
		one, zero := b.like(x, int64(1)), b.like(x, int64(0))
		odd := b.cmp("NE", b.bin("and", y, one), zero)
		negOne := b.sel(odd, b.like(x, int64(-1)), one)
		r := b.sel(b.cmp("EQ", x, one), one, b.sel(b.cmp("EQ", x, b.like(x, int64(-1))), negOne, zero))
		return b.sel(b.cmp("LT", y, zero), r, p), nil
	}))
	DefStableHLO(Div, emit1(func(b hb, in []HLOValue, out Meta, a Attrs) (HLOValue, error) {
		v := operands(b, in, out, true)
		return emitDiv(b, v[0], v[1], a.String("rounding_mode")), nil
	}))

	// Comparisons.
	for h, dir := range map[*Def]string{Eq: "EQ", Ne: "NE", Lt: "LT", Le: "LE", Gt: "GT", Ge: "GE"} {
		name := h.Name
		DefStableHLO(h, emit1(func(b hb, in []HLOValue, out Meta, a Attrs) (HLOValue, error) {
			x, y := b.bcastTo(in[0], out.Shape), b.bcastTo(in[1], out.Shape)
			if x.Type.Elem != y.Type.Elem {
				return HLOValue{}, unsupported(name, "operands of different types %s and %s", x.Type.Elem, y.Type.Elem)
			}
			return b.cmp(dir, x, y), nil
		}))
	}
	DefStableHLO(Where, emit1(func(b hb, in []HLOValue, out Meta, a Attrs) (HLOValue, error) {
		c := b.convert(b.bcastTo(in[0], out.Shape), "i1")
		v := operands(b, in[1:], out, true)
		return b.sel(c, v[0], v[1]), nil
	}))
}

// emitDiv emits torch.div with rounding mode "" (true), "trunc" or "floor".
func emitDiv(b hb, x, y HLOValue, mode string) HLOValue {
	float := isFloatElem(x.Type.Elem)
	switch {
	case mode == "" || (mode == "trunc" && !float):
		return b.bin("divide", x, y) // integer divide truncates toward zero
	case mode == "trunc":
		q := b.bin("divide", x, y)
		return b.sel(b.cmp("LT", q, b.like(q, 0.0)), b.un("ceil", q), b.un("floor", q))
	case !float:
		// Floor division: the truncated quotient, minus one when the
		// remainder is nonzero and its sign differs from the divisor's.
		q, r := b.bin("divide", x, y), b.bin("remainder", x, y)
		zero := b.like(x, int64(0))
		if isUnsignedElem(x.Type.Elem) {
			return q
		}
		adj := b.bin("and", b.cmp("NE", r, zero), b.cmp("NE", b.cmp("LT", r, zero), b.cmp("LT", y, zero)))
		return b.sel(adj, b.bin("subtract", q, b.like(q, int64(1))), q)
	}
	// Float floor division as PyTorch's div_floor_floating: exact through
	// fmod, rounded to the nearest integer quotient, signed zero kept.
	zero, one := b.like(x, 0.0), b.like(x, 1.0)
	mod := b.bin("remainder", x, y)
	div := b.bin("divide", b.bin("subtract", x, mod), y)
	adj := b.bin("and", b.cmp("NE", mod, zero), b.cmp("NE", b.cmp("LT", y, zero), b.cmp("LT", mod, zero)))
	div = b.sel(adj, b.bin("subtract", div, one), div)
	fl := b.un("floor", div)
	fl = b.sel(b.cmp("GT", b.bin("subtract", div, fl), b.like(x, 0.5)), b.bin("add", fl, one), fl)
	signedZero := b.bin("multiply", zero, b.bin("divide", x, y))
	res := b.sel(b.cmp("NE", div, zero), fl, signedZero)
	// Division by zero: x/y (±inf or NaN), as PyTorch.
	return b.sel(b.cmp("EQ", y, zero), b.bin("divide", x, y), res)
}
