package cpulevel

import (
	"slices"
	"testing"
)

func TestLevels(t *testing.T) {
	sup := Supported()
	if len(sup) == 0 || sup[0] != Generic {
		t.Fatalf("Supported() = %v, want generic first", sup)
	}
	if !slices.Equal(sup, All()[:len(sup)]) {
		t.Errorf("Supported() = %v is not a prefix of All() = %v", sup, All())
	}
	for i, l := range All() {
		if Rank(l) != i {
			t.Errorf("Rank(%q) = %d, want %d", l, Rank(l), i)
		}
		if Has(l) != (i < len(sup)) {
			t.Errorf("Has(%q) = %v with Supported() = %v", l, Has(l), sup)
		}
	}
	if Rank("bogus") != -1 || Has("bogus") {
		t.Error("an unknown level has a rank or is supported")
	}
}
