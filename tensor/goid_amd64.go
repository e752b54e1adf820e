package tensor

func getg() uintptr

// goid identifies the calling goroutine: the address of its runtime g
// structure, read in two instructions. It is unique among live goroutines
// (a g is reused only after its goroutine exits), which is all the
// per-goroutine maps need: their entries live inside a function call of
// the goroutine (NoGrad, a trace).
func goid() uint64 { return uint64(getg()) }
