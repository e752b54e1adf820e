package cpu

import "testing"

func TestPickLevel(t *testing.T) {
	sup := SupportedLevels()
	best := sup[len(sup)-1]
	if sup[0] != LevelGeneric {
		t.Fatalf("SupportedLevels() = %v, want generic first", sup)
	}
	// Asking for a level above the CPU's gives the CPU's best.
	capped := func(l string) string {
		if levelRank(l) < levelRank(best) {
			return l
		}
		return best
	}
	tests := []struct{ env, want string }{
		{"", best},
		{"bogus", best},
		{LevelGeneric, LevelGeneric},
		{LevelAVX512BF16, capped(LevelAVX512BF16)},
		{LevelAMX, best},
	}
	for _, l := range sup {
		tests = append(tests, struct{ env, want string }{l, l})
	}
	for _, tc := range tests {
		if got := pickLevel(tc.env); got != tc.want {
			t.Errorf("pickLevel(%q) = %q, want %q (supported %v)", tc.env, got, tc.want, sup)
		}
	}
	for _, l := range allLevels[len(sup):] {
		t.Logf("level %s: not supported by this CPU, its kernels are not run here", l)
	}
}
