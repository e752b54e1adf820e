package main

// The generated wrappers, by op group. An entry with an empty Doc takes its
// doc comment from the op's Def.Doc; variants (a Go number for a tensor
// input, a fixed attribute, ...) say how they differ from the main wrapper.

// m is a method on the op's first input with params as parameters.
func m(name, opName string, params ...string) wrapper {
	return wrapper{Name: name, Op: opName, Params: params}
}

// f is a package-level function with params as parameters.
func f(name, opName string, params ...string) wrapper {
	return wrapper{Name: name, Op: opName, Recv: "-", Params: params}
}

// doc sets a variant's doc comment.
func (w wrapper) doc(s string) wrapper { w.Doc = s; return w }

// out sets the results ("[]" or names).
func (w wrapper) out(s string) wrapper { w.Out = s; return w }

// recv sets the input that is the receiver.
func (w wrapper) recv(s string) wrapper { w.Recv = s; return w }

// scalarVariant is the ...Scalar form of a binary method.
func scalarVariant(name, opName, main string) wrapper {
	return m(name, opName, "other:scalar").doc("is " + main + " with a Go number (float64, int, bool, ...) for other that promotes like a Python scalar.")
}

var wrappers = concat(elementwise, reduce, shape, index, linalg, nn, creation)

func concat(ls ...[]wrapper) []wrapper {
	var out []wrapper
	for _, l := range ls {
		out = append(out, l...)
	}
	return out
}

var elementwise = []wrapper{
	// Unary.
	m("Neg", "neg"), m("Abs", "abs"), m("Sign", "sign"),
	m("Exp", "exp"), m("Exp2", "exp2"), m("Expm1", "expm1"),
	m("Log", "log"), m("Log2", "log2"), m("Log10", "log10"), m("Log1p", "log1p"),
	m("Sqrt", "sqrt"), m("Rsqrt", "rsqrt"), m("Reciprocal", "reciprocal"), m("Square", "square"),
	m("Sin", "sin"), m("Cos", "cos"), m("Tan", "tan"),
	m("Asin", "asin"), m("Acos", "acos"), m("Atan", "atan"),
	m("Sinh", "sinh"), m("Cosh", "cosh"), m("Tanh", "tanh"),
	m("Asinh", "asinh"), m("Acosh", "acosh"), m("Atanh", "atanh"),
	m("Sigmoid", "sigmoid"), m("Logit", "logit"),
	m("LogitEps", "logit", "eps").doc("is Logit of t clamped to [eps, 1-eps] first (torch.logit(t, eps))."),
	m("Erf", "erf"), m("Erfc", "erfc"), m("Erfinv", "erfinv"),
	m("Floor", "floor"), m("Ceil", "ceil"), m("Round", "round"), m("Trunc", "trunc"), m("Frac", "frac"),
	m("RoundDecimals", "round", "decimals").doc("is Round to the given number of decimal places; negative decimals round to the left of the point (torch.round(t, decimals=d)). Integer tensors only accept decimals == 0."),
	m("Relu", "relu"), m("Relu6", "relu6"),
	m("Gelu", "gelu"),
	m("GeluTanh", "gelu", `approximate="tanh"`).doc("is Gelu with the tanh approximation (torch.nn.functional.gelu(t, approximate=\"tanh\"))."),
	m("Silu", "silu"), m("Mish", "mish"), m("Selu", "selu"),
	m("Hardsigmoid", "hardsigmoid"), m("Hardswish", "hardswish"),
	m("Softplus", "softplus", "beta", "threshold"),
	m("Elu", "elu", "alpha"),
	m("LeakyRelu", "leaky_relu", "negative_slope"),
	m("Hardtanh", "hardtanh", "min_val", "max_val"),
	m("NanToNum", "nan_to_num", "nan"),
	m("NanToNumWith", "nan_to_num", "nan", "posinf", "neginf").doc("is NanToNum with +inf replaced by posinf and -inf by neginf (torch.nan_to_num(t, nan, posinf, neginf))."),
	m("IsNaN", "isnan"), m("IsInf", "isinf"), m("IsFinite", "isfinite"),
	m("IsPosInf", "isposinf"), m("IsNegInf", "isneginf"),
	m("LogicalNot", "logical_not"), m("BitwiseNot", "bitwise_not"), m("Signbit", "signbit"),

	// Binary.
	m("Add", "add"),
	scalarVariant("AddScalar", "add", "Add"),
	m("AddAlpha", "add", "other", "alpha").doc("is Add with other scaled by alpha (torch.add(t, other, alpha=alpha)); alpha must not be a float for integer tensors."),
	m("Sub", "sub"),
	scalarVariant("SubScalar", "sub", "Sub"),
	m("SubAlpha", "sub", "other", "alpha").doc("is Sub with other scaled by alpha (torch.sub(t, other, alpha=alpha))."),
	m("RSubScalar", "sub", "input:scalar").recv("other").doc("returns v - t for a Go number v that promotes like a Python scalar (torch.rsub(t, v))."),
	m("Mul", "mul"), scalarVariant("MulScalar", "mul", "Mul"),
	m("Div", "div"), scalarVariant("DivScalar", "div", "Div"),
	m("DivMode", "div", "other", "rounding_mode"),
	m("FloorDivide", "floor_divide"), scalarVariant("FloorDivideScalar", "floor_divide", "FloorDivide"),
	m("Remainder", "remainder"), scalarVariant("RemainderScalar", "remainder", "Remainder"),
	m("Fmod", "fmod"), scalarVariant("FmodScalar", "fmod", "Fmod"),
	m("Pow", "pow"),
	f("ScalarPow", "pow", "input:scalar", "other").doc("is Pow with a Go number for the base (torch.pow(base, exponent))."),
	m("Atan2", "atan2"),
	m("Maximum", "maximum"), m("Minimum", "minimum"), m("Fmax", "fmax"), m("Fmin", "fmin"),
	m("Hypot", "hypot"),
	m("Copysign", "copysign"), scalarVariant("CopysignScalar", "copysign", "Copysign"),
	m("Eq", "eq"), scalarVariant("EqScalar", "eq", "Eq"),
	m("Ne", "ne"), scalarVariant("NeScalar", "ne", "Ne"),
	m("Lt", "lt"), scalarVariant("LtScalar", "lt", "Lt"),
	m("Le", "le"), scalarVariant("LeScalar", "le", "Le"),
	m("Gt", "gt"), scalarVariant("GtScalar", "gt", "Gt"),
	m("Ge", "ge"), scalarVariant("GeScalar", "ge", "Ge"),
	m("LogicalAnd", "logical_and"), m("LogicalOr", "logical_or"), m("LogicalXor", "logical_xor"),
	m("BitwiseAnd", "bitwise_and"), scalarVariant("BitwiseAndScalar", "bitwise_and", "BitwiseAnd"),
	m("BitwiseOr", "bitwise_or"), scalarVariant("BitwiseOrScalar", "bitwise_or", "BitwiseOr"),
	m("BitwiseXor", "bitwise_xor"), scalarVariant("BitwiseXorScalar", "bitwise_xor", "BitwiseXor"),
	m("BitwiseLeftShift", "bitwise_left_shift"),
	scalarVariant("BitwiseLeftShiftScalar", "bitwise_left_shift", "BitwiseLeftShift"),
	m("BitwiseRightShift", "bitwise_right_shift"),
	scalarVariant("BitwiseRightShiftScalar", "bitwise_right_shift", "BitwiseRightShift"),

	// Ternary and clamps.
	f("Where", "where"),
	m("Clamp", "clamp", "min", "max"),
	m("ClampMin", "clamp", "min", "max=nil").doc("returns max(t, min) for a Go number min (torch.clamp_min)."),
	m("ClampMax", "clamp", "min=nil", "max").doc("returns min(t, max) for a Go number max (torch.clamp_max)."),
	m("ClampTensor", "clamp_tensor"),
	m("Lerp", "lerp"),
	m("Addcmul", "addcmul", "tensor1", "tensor2", "value"),
	m("Addcdiv", "addcdiv", "tensor1", "tensor2", "value"),
}

var reduce = []wrapper{
	m("Sum", "sum", "dims", "keepdim"),
	m("SumAll", "sum", "dims=[]int{}", "keepdim=false").doc("returns the sum of all elements as a 0-d tensor."),
	m("SumAs", "sum", "dtype", "dims", "keepdim").doc("is Sum computed in dtype dt (torch.sum(dtype=dt)): the input is converted to dt first."),
	m("Prod", "prod", "dims", "keepdim"),
	m("ProdAll", "prod", "dims=[]int{}", "keepdim=false").doc("returns the product of all elements as a 0-d tensor."),
	m("ProdAs", "prod", "dtype", "dims", "keepdim").doc("is Prod computed in dtype dt (torch.prod(dtype=dt))."),
	m("Mean", "mean", "dims", "keepdim"),
	m("MeanAll", "mean", "dims=[]int{}", "keepdim=false").doc("returns the mean of all elements as a 0-d tensor."),
	m("MeanAs", "mean", "dtype", "dims", "keepdim").doc("is Mean computed in floating dtype dt (torch.mean(dtype=dt))."),
	m("Amax", "amax", "dims", "keepdim"),
	m("Amin", "amin", "dims", "keepdim"),
	m("Max", "max"), m("Min", "min"),
	m("MaxDim", "max_dim", "dim", "keepdim").out("values, indices"),
	m("MinDim", "min_dim", "dim", "keepdim").out("values, indices"),
	m("Argmax", "argmax", "dim", "keepdim"),
	m("ArgmaxAll", "argmax").doc("returns the index of the first maximum of the flattened tensor."),
	m("Argmin", "argmin", "dim", "keepdim"),
	m("ArgminAll", "argmin").doc("returns the index of the first minimum of the flattened tensor."),
	m("Aminmax", "aminmax").out("minimum, maximum"),
	m("AminmaxDim", "aminmax", "dim", "keepdim").out("minimum, maximum").doc("is Aminmax along dim (torch.aminmax(dim=dim, keepdim=keepdim))."),
	m("Var", "var", "dims", "correction", "keepdim"),
	m("Std", "std", "dims", "correction", "keepdim"),
	m("VarMean", "var_mean", "dims", "correction", "keepdim").out("variance, mean"),
	m("StdMean", "std_mean", "dims", "correction", "keepdim").out("std, mean"),
	m("Norm", "norm", "p", "dims", "keepdim"),
	m("NormAs", "norm", "dtype", "p", "dims", "keepdim").doc("is Norm computed in floating dtype dt (torch.norm(dtype=dt))."),
	m("Logsumexp", "logsumexp", "dims", "keepdim"),
	m("Softmax", "softmax", "dim"),
	m("SoftmaxAs", "softmax", "dim", "dtype").doc("is Softmax of t converted to dt first (torch.softmax(dtype=dt))."),
	f("Softmax", "softmax", "input", "dim"),
	m("LogSoftmax", "log_softmax", "dim"),
	m("LogSoftmaxAs", "log_softmax", "dim", "dtype").doc("is LogSoftmax of t converted to dt first (torch.log_softmax(dtype=dt))."),
	f("LogSoftmax", "log_softmax", "input", "dim"),
	m("Cumsum", "cumsum", "dim"),
	m("CumsumAs", "cumsum", "dim", "dtype").doc("is Cumsum computed in dtype dt (torch.cumsum(dtype=dt))."),
	m("Cumprod", "cumprod", "dim"),
	m("CumprodAs", "cumprod", "dim", "dtype").doc("is Cumprod computed in dtype dt (torch.cumprod(dtype=dt))."),
	m("All", "all", "dims", "keepdim"),
	m("Any", "any", "dims", "keepdim"),
	m("CountNonzero", "count_nonzero", "dims..."),
	m("Sort", "sort", "dim", "descending", "stable=true").out("values, indices"),
	m("Argsort", "argsort", "dim", "descending", "stable=true"),
	m("Topk", "topk", "k", "dim", "largest", "sorted").out("values, indices"),
	f("Topk", "topk", "input", "k", "dim", "largest", "sorted").out("values, indices"),
	m("Cummax", "cummax", "dim").out("values, indices"),
	m("Cummin", "cummin", "dim").out("values, indices"),
	m("Median", "median"),
	m("MedianDim", "median_dim", "dim", "keepdim").out("values, indices"),
}

var shape = []wrapper{
	m("Reshape", "reshape", "shape..."),
	m("View", "view", "shape..."),
	m("Permute", "permute", "dims..."),
	m("Expand", "expand", "shape..."),
	m("Slice", "slice", "dim", "start", "end", "step"),
	m("Select", "select", "dim", "index"),
	m("Diagonal", "diagonal", "offset", "dim1", "dim2"),
	m("AsStrided", "as_strided", "shape", "strides", "offset"),
	m("Transpose", "transpose", "dim0", "dim1"),
	m("T", "t"),
	m("Narrow", "narrow", "dim", "start", "length"),
	m("Squeeze", "squeeze", "dims..."),
	m("Unsqueeze", "unsqueeze", "dim"),
	m("Flatten", "flatten", "start_dim", "end_dim"),
	m("Unflatten", "unflatten", "dim", "sizes..."),
	m("Movedim", "movedim", "source", "destination"),
}

var index = []wrapper{
	m("Unbind", "unbind", "dim").out("[]"),
	f("Cat", "cat", "tensors", "dim"),
	f("Stack", "stack", "tensors", "dim"),
	m("Split", "split", "split_size", "dim").out("[]"),
	m("SplitSizes", "split", "sections", "dim").out("[]").doc("splits t into views of the given sizes along dim, which must add up to its size (torch.split with a list)."),
	m("Chunk", "chunk", "chunks", "dim").out("[]"),
	f("Gather", "gather", "input", "dim", "index"),
	m("Gather", "gather", "dim", "index"),
	m("Scatter", "scatter", "dim", "index", "src"),
	m("ScatterValue", "scatter", "dim", "index", "src=nil", "value:norm").doc("is Scatter writing the Go scalar value (torch.scatter with a value)."),
	m("ScatterReduce", "scatter_reduce", "dim", "index", "src", "reduce", "include_self"),
	m("ScatterAdd", "scatter_add", "dim", "index", "src"),
	m("IndexSelect", "index_select", "dim", "index"),
	m("IndexAdd", "index_add", "dim", "index", "source"),
	m("IndexAddAlpha", "index_add", "dim", "index", "source", "alpha:norm").doc("is IndexAdd with source scaled by alpha (index_add(..., alpha=alpha))."),
	m("IndexCopy", "index_copy", "dim", "index", "source"),
	m("IndexFill", "index_fill", "dim", "index", "value:norm"),
	m("Take", "take"),
	m("MaskedScatter", "masked_scatter"),
	m("PadND", "pad_nd", "low", "high", "interior", "value:norm"),
	m("Flip", "flip", "dims..."),
	m("Roll", "roll", "shifts", "dims"),
	m("Diag", "diag", "diagonal"),
	m("Repeat", "repeat", "repeats..."),
	m("Tile", "tile", "dims..."),
}

// prec is the process-wide matmul precision that matrix products run at.
const prec = "precision=MatmulPrecision()"

var linalg = []wrapper{
	f("Matmul", "matmul", "input", "other", prec),
	m("Matmul", "matmul", "other", prec),
	f("Mm", "mm", "input", "mat2", prec),
	m("Mm", "mm", "mat2", prec),
	f("Bmm", "bmm", "input", "mat2", prec),
	m("Bmm", "bmm", "mat2", prec),
	f("Addmm", "addmm", "input", "mat1", "mat2", prec),
	f("AddmmScaled", "addmm", "input", "mat1", "mat2", "beta", "alpha", prec).doc("is Addmm with input scaled by beta and the product by alpha, Go numbers (torch.addmm(input, mat1, mat2, beta=beta, alpha=alpha)); with beta == 0 input is ignored (NaN in it does not propagate)."),
	f("Baddbmm", "baddbmm", "input", "batch1", "batch2", prec),
	f("BaddbmmScaled", "baddbmm", "input", "batch1", "batch2", "beta", "alpha", prec).doc("is Baddbmm with input scaled by beta and the product by alpha, Go numbers (torch.baddbmm(input, batch1, batch2, beta=beta, alpha=alpha))."),
	f("Linear", "linear", "input", "weight", "bias", prec),
	f("Dot", "dot", "input", "other", prec),
	m("Dot", "dot", "other", prec),
	f("Vdot", "vdot", "input", "other", prec),
	f("Outer", "outer", "input", "vec2"),
	m("Outer", "outer", "vec2"),
	f("Tensordot", "tensordot", "a", "b", "dims_a", "dims_b", prec),
}

var nn = []wrapper{
	f("LayerNorm", "layer_norm", "input", "normalized_shape:raw", "weight", "bias", "eps"),
	f("GroupNorm", "group_norm", "input", "num_groups", "weight", "bias", "eps"),
	f("Embedding", "embedding", "weight", "indices"),
}

var creation = []wrapper{
	m("Tril", "tril", "diagonal"),
	f("Tril", "tril", "input", "diagonal"),
	m("Triu", "triu", "diagonal"),
	f("Triu", "triu", "input", "diagonal"),
}

// handWritten lists the ops whose tensor API is written by hand, with the
// reason. Ops in wrappers may have hand-written wrappers too (PowScalar,
// Contiguous, LerpScalar, ...): those are named in handWrittenWrappers.
var handWritten = map[string]string{
	// Internal ops, reached through Apply or other wrappers only.
	"convert":                          "Tensor.To and friends choose the op (and skip it for an unchanged dtype)",
	"copy":                             "Clone and Contiguous are hand-written: Contiguous returns t itself when it is contiguous",
	"copy_":                            "written through copyInto and CopyFrom, which check castability first",
	"as_strided_scatter":               "internal: the autograd rule of as_strided",
	"cumulative":                       "internal: the primitive behind cumsum, cumprod, cummax and cummin",
	"reduce":                           "internal: the primitive behind the reductions",
	"round_nearest_even":               "internal: the primitive behind round",
	"dot_general":                      "DotGeneral takes a DotGeneralDims struct and a per-call precision",
	"reduce_window":                    "ReduceWindow takes a WindowOpts struct",
	"iota":                             "creation ops take a device and pick a default dtype (ApplyOn)",
	"full":                             "creation ops take a device and pick a default dtype (ApplyOn)",
	"zeros":                            "creation ops take a device and pick a default dtype (ApplyOn)",
	"ones":                             "creation ops take a device and pick a default dtype (ApplyOn)",
	"empty":                            "creation ops take a device and pick a default dtype (ApplyOn)",
	"arange":                           "creation ops take a device and pick a default dtype (ApplyOn)",
	"linspace":                         "creation ops take a device and pick a default dtype (ApplyOn)",
	"eye":                              "creation ops take a device and pick a default dtype (ApplyOn)",
	"zeros_like":                       "the dtype is an optional variadic argument",
	"ones_like":                        "the dtype is an optional variadic argument",
	"empty_like":                       "the dtype is an optional variadic argument",
	"full_like":                        "the dtype is an optional variadic argument",
	"random_bits":                      "random ops draw from a Generator (randomOn)",
	"rand":                             "random ops draw from a Generator (randomOn)",
	"randn":                            "random ops draw from a Generator (randomOn)",
	"randint":                          "random ops draw from a Generator (randomOn)",
	"randperm":                         "random ops draw from a Generator (randomOn)",
	"uniform":                          "random ops draw from a Generator (randomOn)",
	"normal":                           "random ops draw from a Generator (randomOn)",
	"bernoulli":                        "random ops draw from a Generator (randomOn)",
	"multinomial":                      "random ops draw from a Generator (randomOn)",
	"dropout":                          "random ops draw from a Generator (randomOn)",
	"scaled_dot_product_attention":     "takes an SDPAOpts struct and draws from a Generator when dropout_p > 0",
	"paged_attention":                  "takes a PagedAttentionOpts struct (mask and scale), as ScaledDotProductAttention takes SDPAOpts",
	"conv1d":                           "takes a ConvOpts struct whose zero values mean PyTorch's defaults",
	"conv2d":                           "takes a ConvOpts struct whose zero values mean PyTorch's defaults",
	"conv_transpose1d":                 "takes a ConvTransposeOpts struct whose zero values mean PyTorch's defaults",
	"conv_transpose2d":                 "takes a ConvTransposeOpts struct whose zero values mean PyTorch's defaults",
	"convolution":                      "takes a ConvolutionOpts struct whose zero values mean PyTorch's defaults",
	"max_pool1d":                       "takes a PoolOpts struct whose zero values mean PyTorch's defaults",
	"max_pool2d":                       "takes a PoolOpts struct whose zero values mean PyTorch's defaults",
	"max_pool2d_with_indices":          "takes a PoolOpts struct whose zero values mean PyTorch's defaults",
	"avg_pool1d":                       "takes an AvgPoolOpts struct whose zero values mean PyTorch's defaults",
	"avg_pool2d":                       "takes an AvgPoolOpts struct whose zero values mean PyTorch's defaults",
	"adaptive_avg_pool2d":              "takes the output size as two ints (oh, ow)",
	"adaptive_max_pool2d":              "takes the output size as two ints (oh, ow)",
	"interpolate":                      "takes an InterpolateOpts struct",
	"batch_norm":                       "takes a BatchNormOpts struct and updates the running statistics in place",
	"rms_norm":                         "eps <= 0 means the dtype's machine epsilon (the attribute is left out)",
	"one_hot":                          "numClasses < 0 is read from the data (a sync point)",
	"cross_entropy":                    "the losses take LossOpts / CrossEntropyOpts structs",
	"nll_loss":                         "the losses take LossOpts / CrossEntropyOpts structs",
	"mse_loss":                         "the losses take LossOpts / CrossEntropyOpts structs",
	"l1_loss":                          "the losses take LossOpts / CrossEntropyOpts structs",
	"smooth_l1_loss":                   "the losses take LossOpts / CrossEntropyOpts structs",
	"huber_loss":                       "the losses take LossOpts / CrossEntropyOpts structs",
	"binary_cross_entropy":             "the losses take LossOpts / CrossEntropyOpts structs",
	"binary_cross_entropy_with_logits": "the losses take LossOpts / CrossEntropyOpts structs",
	"kl_div":                           "the losses take LossOpts / CrossEntropyOpts structs",
	"einsum":                           "the operands are variadic after the equation",
	"linear_gguf":                      "reached through package gguf's quantised linear layers",
	"dequantize_gguf":                  "reached through package models' quantized token embeddings",
	"index":                            "boolean masks are turned into integer indices with Nonzero first",
	"index_put":                        "the indices are a variadic tail after values; the Go order differs",
	"masked_fill":                      "value may be a Go number or a 0-d tensor",
	"masked_select":                    "the output size is read back from the device first (a sync point)",
	"nonzero":                          "the output size is read back from the device first (a sync point)",
	"repeat_interleave":                "an optional dim and, with tensor repeats, a data-dependent output size",
	"take_along_dim":                   "an optional dim given as a variadic argument",
	"pad":                              "mode \"\" means \"constant\"",
	"adam_step":                        "optimizer steps are called by package optim with attributes it builds",
	"sgd_step":                         "optimizer steps are called by package optim with attributes it builds",
}

// handWrittenWrappers are hand-written wrappers of ops that also have
// generated ones, with the reason. The in-place methods (AddInPlace,
// ScatterInPlace, ...) are hand-written too: each runs its functional
// method and writes the result back (Tensor.inplace), so it follows that
// method rather than an op.
var handWrittenWrappers = map[string]string{
	"PowScalar":  "an integer tensor to a negative integer power is an error, checked in Go before the op",
	"LerpScalar": "the op has an input and an attribute both named weight",
	"Clone":      "op copy's other wrapper, Contiguous, has logic; the two stay together",
	"Contiguous": "returns t itself when it is already contiguous",
	"ExpandAs":   "Expand to another tensor's shape",
	"MatmulPrec": "an explicit precision, \"\" meaning the process-wide one",
}
