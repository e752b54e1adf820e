package tensor

// Reductions, scans and sorts (torch.sum, mean, max, argmax, var, norm,
// logsumexp, softmax, cumsum, sort, topk, ...). Their typed API is generated
// from the op table (reduce_gen.go, see internal/gen/opapi). A dims argument
// of nil (or empty) reduces over every dimension; negative dims count from
// the end.
