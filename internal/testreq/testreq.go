// Package testreq is for tests that need data a tools script fetches
// (tokenizers, GGUF files, the MiniLM checkpoint, the OpenAI clients): on a
// developer's machine without the data such a test skips, saying which
// script fetches it; in CI (CI=true), where .ci/run runs those scripts
// first, the same absence is a failure, so a failed fetch can never turn a
// test into a silent skip.
package testreq

import (
	"os"
	"testing"
)

// InCI reports whether the tests run under CI (the environment variable
// CI is "true", as .ci/run and most CI systems set it).
func InCI() bool { return os.Getenv("CI") == "true" }

// Missing skips t with the formatted message, or fails it under CI.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if InCI() {
		t.Fatalf(format+" (CI=true: .ci/run fetches this before the tests, so its absence is a failure)", args...)
		return // (Fatalf does not return on a real testing.T)
	}
	t.Skipf(format, args...)
}
