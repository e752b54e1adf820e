package cpu

import "testing"

// TestPhiloxKnownAnswers checks Philox4x32-10 against Random123's published
// known-answer vectors (tests/kat_vectors).
func TestPhiloxKnownAnswers(t *testing.T) {
	tests := []struct {
		ctr  [4]uint32
		key  [2]uint32
		want [4]uint32
	}{
		{[4]uint32{0, 0, 0, 0}, [2]uint32{0, 0}, [4]uint32{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
		{[4]uint32{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, [2]uint32{0xffffffff, 0xffffffff},
			[4]uint32{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
		{[4]uint32{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, [2]uint32{0xa4093822, 0x299f31d0},
			[4]uint32{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
	}
	for _, tc := range tests {
		if got := Philox(tc.ctr, tc.key); got != tc.want {
			t.Errorf("Philox(%08x, %08x) = %08x, want %08x", tc.ctr, tc.key, got, tc.want)
		}
	}
}

// TestBlockCounterLayout: gotpu's counter (lo, hi) maps to Philox words
// (lo, lo>>32, hi, hi>>32) and the seed to the key (seed, seed>>32).
func TestBlockCounterLayout(t *testing.T) {
	got := block(0x299f31d0a4093822, 0x85a308d3243f6a88, 0x0370734413198a2e)
	if want := [4]uint32{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}; got != want {
		t.Fatalf("block = %08x, want %08x", got, want)
	}
}
