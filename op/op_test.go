package op

import "testing"

// notDifferentiable lists the primitives with no VJP: their outputs are
// integers, booleans or fresh values, or they update their inputs in place
// (PyTorch's derivatives.yaml marks them non-differentiable or has no entry).
var notDifferentiable = map[*Def]bool{
	AdamStep: true, SgdStep: true, // in-place optimizer steps
	Argmax: true, Argmin: true, Nonzero: true, // integer results
	Eq: true, Ne: true, Lt: true, Le: true, Gt: true, Ge: true, Signbit: true, // boolean results
	BitwiseAnd: true, BitwiseOr: true, BitwiseXor: true, BitwiseNot: true,
	BitwiseLeftShift: true, BitwiseRightShift: true, // integer and bool dtypes only
	Full: true, Iota: true, RandomBits: true, // no tensor inputs to differentiate
}

// TestEveryDifferentiableOpHasAVJP checks that VJPs, attached by handle
// (DefVJP), reached the table: every primitive and view has one unless it
// is listed in notDifferentiable, and the composites keep their own VJPs
// (the PyTorch formulas the golden gradients were computed with).
func TestEveryDifferentiableOpHasAVJP(t *testing.T) {
	composites := 0
	for _, d := range All() {
		switch {
		case d.Kind == Composite:
			if d.VJP != nil {
				composites++
			}
		case notDifferentiable[d]:
			if d.VJP != nil {
				t.Errorf("%s has a VJP but is listed in notDifferentiable", d.Name)
			}
		case d.VJP == nil:
			t.Errorf("%s (%s) has no VJP", d.Name, d.Kind)
		}
	}
	// 54 composites had their own VJP when DefVJP moved from names to
	// handles; fewer means one was lost. Raise the number when adding one.
	if want := 54; composites < want {
		t.Errorf("%d composites have their own VJP, want at least %d", composites, want)
	}
}

// TestEveryPrimitiveHasAnEmitter checks that the StableHLO emitters,
// attached by handle (DefStableHLO), reached the table: every primitive
// and view has one (stablehlo's TestEveryPrimitiveExports then runs them)
// and no composite does (composites are lowered first).
func TestEveryPrimitiveHasAnEmitter(t *testing.T) {
	for _, d := range All() {
		if has := d.StableHLO != nil; has != (d.Kind != Composite) {
			t.Errorf("%s (%s): StableHLO emitter %v", d.Name, d.Kind, has)
		}
	}
}

func TestEveryHandleIsRegistered(t *testing.T) {
	if stale := CheckHandles(); len(stale) > 0 {
		t.Fatalf("handles of ops that are not registered (run go generate ./tensor): %v", stale)
	}
	for _, d := range All() {
		if d.Name == "" {
			t.Fatalf("an op with an empty name")
		}
	}
	if Add != MustLookup("add") || ViewOp != MustLookup("view") {
		t.Fatalf("a handle is not the table's Def")
	}
}
