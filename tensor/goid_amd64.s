#include "textflag.h"

// func getg() uintptr returns the address of the calling goroutine's g,
// read from thread-local storage: a unique identity while the goroutine
// lives (see goid).
TEXT ·getg(SB), NOSPLIT, $0-8
	MOVQ (TLS), AX
	MOVQ AX, ret+0(FP)
	RET
