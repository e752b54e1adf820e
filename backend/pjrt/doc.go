// Package pjrt runs gotpu on XLA through the PJRT C API: XLA's CPU plugin as
// the device "xla", libtpu as "tpu" and the CUDA plugin as "cuda".
//
// The package is cgo and only builds with the pjrt build tag
// (go build -tags pjrt); without the tag it is this documentation alone and
// the default build stays pure Go. With the tag, importing the package
// registers every plugin it finds at init (GOTPU_PJRT_AUTOLOAD=0 turns that
// off; Open loads one by name). Plugins are searched in GOTPU_PJRT_PLUGIN
// ("name=path[,name=path]"), python site-packages, the fetch cache
// (GOTPU_PJRT_CACHE, default $HOME/.cache/gotpu/pjrt, filled by
// tools/pjrt/fetch.sh) and the dynamic loader's path. A missing plugin is an
// error that says what to install; `gotpu pjrt` lists what was found.
//
// Buffers: PJRT buffers are immutable, so a gotpu buffer is a handle whose
// contents live on the host (after a write) or in a flat PJRT buffer (after
// a launch), replaced by every write.
//
// Eager launches (the Strict and Debug modes) build a one-node IR graph per
// (op, attributes, shapes, dtypes) over flat parameters viewed with the
// operands' layouts, export it to StableHLO, compile it with PJRT once and
// cache the executable by the graph's fingerprint (plus the values of
// dynamic attributes such as seeds, which XLA bakes in). A few ops are
// rewritten where XLA's arithmetic differs from gotpu's contract (see
// rewrite.go). The backend also implements device.Compiler: whole graphs
// are lowered, exported and compiled into one executable, serialized with
// PJRT_Executable_Serialize.
package pjrt
