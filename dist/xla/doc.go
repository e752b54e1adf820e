// Package xla is dist's xla engine (issue #16), first slice: a whole
// training step compiled as one SPMD program and run on the devices of a
// PJRT client, the collectives inside the program.
//
// A step is a Go function traced by package compile and exported as
// StableHLO for the global shapes; each input and output gets a sharding
// over a device mesh (pjrt.Mesh, pjrt.Sharding: data parallel splits the
// batch, tensor parallel splits weights) and XLA's SPMD partitioner (GSPMD
// or Shardy) splits the program and inserts the collectives — the
// gradient all-reduce of data parallelism, the partial-sum reductions of
// tensor parallelism. On XLA's CPU plugin the devices are N devices of
// one process (create option cpu_device_count); on TPU pods and GPU
// clusters they are the accelerators.
//
// It needs the pjrt build tag (cgo); without it the package is this
// documentation alone.
package xla
