package tensor

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
)

// Mode is an eager execution mode.
type Mode int32

const (
	// Strict dispatches each op on its own; on an asynchronous device the op
	// is enqueued on the device's stream. It is the default.
	Strict Mode = iota
	// Debug runs each op synchronously and checks it: index bounds (with the
	// offending index and the caller's line), the first op to produce NaN or
	// Inf from finite inputs, and use of freed storage.
	Debug
	// Fused (DeferAndFuse) records ops into a pending graph instead of
	// running them; tensors are promises. The graph is cut, compiled (or
	// fetched from the program cache) and run as one program when a value
	// is read (Item, Bytes, String, saving), at Sync or Flush, at the end of
	// Backward, at a node-count limit (SetFuseNodeLimit) and where the op
	// sequence repeats (each step of a training loop becomes one cached
	// program). GOTPU_DEFER_AND_FUSE=1 selects it at start-up.
	Fused
)

func (m Mode) String() string {
	switch m {
	case Strict:
		return "strict"
	case Debug:
		return "debug"
	case Fused:
		return "fused"
	}
	return "mode(" + strconv.Itoa(int(m)) + ")"
}

// mode is process-wide: Go has no thread-locals, so the mode is explicit,
// global state read atomically by every op. Set it at start-up (or in tests)
// with SetMode; it is not a per-goroutine setting.
var mode atomic.Int32

// nanPanic makes Debug mode panic at the first NaN/Inf producer instead of
// only recording it.
var nanPanic atomic.Bool

func init() {
	if envBool("GOTPU_DEFER_AND_FUSE") {
		mode.Store(int32(Fused))
	}
	if envBool("GOTPU_LAUNCH_BLOCKING") {
		mode.Store(int32(Debug))
	}
	if v := os.Getenv("GOTPU_DEBUG_NAN"); v == "panic" {
		nanPanic.Store(true)
	}
}

func envBool(k string) bool {
	switch strings.ToLower(os.Getenv(k)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

// SetMode sets the process-wide eager mode and returns the previous one.
// Leaving Fused mode runs what it recorded.
func SetMode(m Mode) Mode {
	old := Mode(mode.Swap(int32(m)))
	if old == Fused && m != Fused {
		flushAll("mode-change")
	}
	return old
}

// CurrentMode returns the process-wide eager mode.
func CurrentMode() Mode { return Mode(mode.Load()) }

// SetNaNPanic makes Debug mode panic (with an *Error) at the first op that
// produces NaN or Inf from finite inputs, instead of only recording it for
// FirstNonFinite. It returns the previous setting.
func SetNaNPanic(on bool) bool { return nanPanic.Swap(on) }

// callerSite returns "file:line" of the first caller outside gotpu's library
// packages (test files count as callers).
func callerSite() string {
	var pcs [48]uintptr
	n := runtime.Callers(3, pcs[:])
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		if !isLibraryFrame(f) {
			return shortFile(f.File) + ":" + strconv.Itoa(f.Line)
		}
		if !more {
			return ""
		}
	}
}

const modulePrefix = "github.com/gotpu/gotpu/"

func isLibraryFrame(f runtime.Frame) bool {
	if strings.HasSuffix(f.File, "_test.go") {
		return false
	}
	fn := f.Function
	if strings.HasPrefix(fn, "runtime.") || strings.HasPrefix(fn, "testing.") {
		return true
	}
	if !strings.HasPrefix(fn, modulePrefix) {
		return false
	}
	rest := fn[len(modulePrefix):]
	// Commands and examples are callers, not library.
	return !strings.HasPrefix(rest, "cmd/") && !strings.HasPrefix(rest, "examples/")
}

func shortFile(p string) string {
	// Keep the last two path elements: "pkg/file.go".
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return p
	}
	j := strings.LastIndexByte(p[:i], '/')
	return p[j+1:]
}
