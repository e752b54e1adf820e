package op

import (
	"strings"
	"testing"
)

// TestGGUFBlockOf checks the name and "#N" lookups, in any case, and the
// error for anything else.
func TestGGUFBlockOf(t *testing.T) {
	for _, c := range []struct {
		name string
		want string // block name, "" for an error
	}{
		{"q4_k", "q4_k"}, {"Q4_K", "q4_k"}, {"q6_K", "q6_k"}, {"#12", "q4_k"}, {"#2", "q4_0"}, {"#8", "q8_0"},
		{"#02", ""}, {"#9", ""}, {"q4", ""}, {"", ""}, {"f32", ""},
	} {
		b, err := GGUFBlockOf(c.name)
		switch {
		case c.want == "" && err == nil:
			t.Errorf("GGUFBlockOf(%q) = %v, want an error", c.name, b)
		case c.want == "" && !strings.Contains(err.Error(), "unsupported block type"):
			t.Errorf("GGUFBlockOf(%q): %v", c.name, err)
		case c.want != "" && (err != nil || b.Name != c.want):
			t.Errorf("GGUFBlockOf(%q) = %v, %v; want %s", c.name, b, err, c.want)
		}
	}
	for _, b := range GGUFBlocks() {
		if got, err := GGUFBlockOf(strings.ToUpper(b.Name)); err != nil || got != b {
			t.Errorf("GGUFBlockOf(%q) = %v, %v", strings.ToUpper(b.Name), got, err)
		}
	}
}
