package op

import "testing"

func TestNoOrphanVJPs(t *testing.T) {
	if orphans := CheckVJPs(); len(orphans) > 0 {
		t.Fatalf("DefVJP for unregistered ops: %v", orphans)
	}
}
