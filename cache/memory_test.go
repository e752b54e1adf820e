package cache

import (
	"fmt"
	"testing"
)

func TestMemTierLRUByBytes(t *testing.T) {
	m := newMemTier(100)
	m.add("a", make([]byte, 40))
	m.add("b", make([]byte, 40))
	if _, ok := m.get("a"); !ok { // a is now most recently used
		t.Fatal("a missing")
	}
	m.add("c", make([]byte, 40)) // 120 > 100: evicts b (least recent)
	if _, ok := m.get("b"); ok {
		t.Fatal("b should have been evicted")
	}
	for _, h := range []string{"a", "c"} {
		if _, ok := m.get(h); !ok {
			t.Fatalf("%s evicted, want kept", h)
		}
	}
	n, b, ev := m.usage()
	if n != 2 || b != 80 || ev != 1 {
		t.Fatalf("usage = %d entries, %d bytes, %d evictions; want 2, 80, 1", n, b, ev)
	}
	m.add("huge", make([]byte, 101)) // larger than the budget: not stored, evicts nothing
	if _, ok := m.get("huge"); ok {
		t.Fatal("an entry larger than the budget was stored")
	}
	m.add("d", make([]byte, 100)) // exactly the budget: evicts everything else
	if n, b, _ := m.usage(); n != 1 || b != 100 {
		t.Fatalf("usage = %d entries, %d bytes; want 1, 100", n, b)
	}
	m.add("d", make([]byte, 10)) // replace shrinks the total
	if _, b, _ := m.usage(); b != 10 {
		t.Fatalf("bytes after replace = %d, want 10", b)
	}
	m.remove("d")
	if n, b, _ := m.usage(); n != 0 || b != 0 {
		t.Fatalf("usage after remove = %d, %d", n, b)
	}
}

func TestMemTierDisabled(t *testing.T) {
	m := newMemTier(-1)
	m.add("a", []byte("x"))
	if _, ok := m.get("a"); ok {
		t.Fatal("disabled tier stored an entry")
	}
}

func TestMemTierManyKeys(t *testing.T) {
	m := newMemTier(1000)
	for i := 0; i < 1000; i++ {
		m.add(fmt.Sprint(i), make([]byte, 10))
	}
	n, b, ev := m.usage()
	if n != 100 || b != 1000 || ev != 900 {
		t.Fatalf("usage = %d, %d, %d; want 100, 1000, 900", n, b, ev)
	}
	for i := 900; i < 1000; i++ {
		if _, ok := m.get(fmt.Sprint(i)); !ok {
			t.Fatalf("recent key %d evicted", i)
		}
	}
}
