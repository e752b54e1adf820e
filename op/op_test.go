package op

import "testing"

func TestNoOrphanVJPs(t *testing.T) {
	if orphans := CheckVJPs(); len(orphans) > 0 {
		t.Fatalf("DefVJP for unregistered ops: %v", orphans)
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
