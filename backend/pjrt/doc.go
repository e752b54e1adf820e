// Package pjrt runs gotpu on XLA through the PJRT C API: XLA's CPU plugin as
// the device "xla", libtpu as "tpu" and the CUDA plugin as "cuda".
//
// The package is cgo and only builds with the pjrt build tag
// (go build -tags pjrt); without the tag it is this documentation alone and
// the default build stays pure Go. With the tag, importing the package
// registers every plugin it finds at init (see Open for the search order);
// tools/pjrt/fetch.sh downloads XLA's CPU plugin into the cache directory
// the search covers.
//
// Eager launches (the Strict and Debug modes) build a one-node IR graph per
// (op, attributes, shapes, dtypes), export it to StableHLO, compile it with
// PJRT once and cache the executable by the graph's fingerprint. The backend
// also implements device.Compiler for whole programs.
package pjrt
