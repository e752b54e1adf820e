package ir

import "testing"

func BenchmarkTraceMLP(b *testing.B) {
	for b.Loop() {
		if _, err := mlp.trace(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLowerCSEDCEMLP(b *testing.B) {
	g, err := mlp.trace()
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		l, err := Lower(g)
		if err != nil {
			b.Fatal(err)
		}
		_ = DCE(CSE(l))
	}
}

func BenchmarkFingerprintLoweredMLP(b *testing.B) {
	g, err := mlp.trace(Decompose(true))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		_ = g.Fingerprint()
	}
}

func BenchmarkVerifyLoweredMLP(b *testing.B) {
	g, err := mlp.trace(Decompose(true))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := g.Verify(); err != nil {
			b.Fatal(err)
		}
	}
}
