package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// TestInfoEnvironment checks the environment table: every variable this
// binary reads, set or not; other set GOTPU_ variables marked; no secret;
// no pjrt-only variable (XLA_FLAGS) in the default build; the values in
// one column however long the names.
func TestInfoEnvironment(t *testing.T) {
	environ := []string{"GOTPU_LOG=1", "GOTPU_A_VERY_LONG_VARIABLE_NAME_INDEED=x", "GOTPU_API_KEY=secret", "PATH=/bin"}
	lookup := func(k string) (string, bool) {
		for _, kv := range environ {
			if n, v, _ := strings.Cut(kv, "="); n == k {
				return v, true
			}
		}
		return "", false
	}
	env := collectEnv(environ, lookup)
	var w bytes.Buffer
	writeInfo(&w, infoReport{Environment: env})
	text := w.String()[strings.Index(w.String(), "environment:\n")+len("environment:\n"):]
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	col := -1
	for _, l := range lines {
		f := strings.Fields(l)
		c := strings.Index(l, f[1])
		if col >= 0 && c != col {
			t.Errorf("value column %d, want %d:\n%s", c, col, text)
		}
		col = c
	}
	for _, tc := range []struct {
		name, line string // line "": not listed
	}{
		{"GOTPU_LOG", "1"},
		{"GOTPU_CPU_LEVEL", "(unset)"},
		{"GOTPU_MNIST_DIR", "(unset)"},
		{"GOTPU_A_VERY_LONG_VARIABLE_NAME_INDEED", "x  (not read by gotpu)"},
		{"GOTPU_API_KEY", ""},
		{"PATH", ""},
		{"XLA_FLAGS", map[bool]string{true: "(unset)", false: ""}[pjrtBuild]},
	} {
		i := slices.IndexFunc(lines, func(l string) bool { return strings.Fields(l)[0] == tc.name })
		switch {
		case tc.line == "" && i >= 0:
			t.Errorf("%s listed: %q", tc.name, lines[i])
		case tc.line != "" && i < 0:
			t.Errorf("%s not listed:\n%s", tc.name, text)
		case tc.line != "" && strings.TrimSpace(lines[i][col:]) != tc.line:
			t.Errorf("%s: %q, want %q", tc.name, lines[i][col:], tc.line)
		}
	}
}
