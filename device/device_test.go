package device

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

type hostBuf []byte

func (b hostBuf) Size() int { return len(b) }

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want Device
		err  bool
	}{
		{"cpu", Device{"cpu", 0}, false},
		{"tpu:3", Device{"tpu", 3}, false},
		{"tpu:x", Device{}, true},
		{":1", Device{}, true},
		{"cuda:-1", Device{}, true},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("Parse(%q) = %v, %v", tt.in, got, err)
		}
	}
	if s := (Device{"tpu", 2}).String(); s != "tpu:2" {
		t.Errorf("String = %q", s)
	}
}

func TestLookupUnknown(t *testing.T) {
	_, err := Lookup("nonesuch")
	if !errors.Is(err, ErrUnknownDevice) {
		t.Fatalf("err = %v", err)
	}
}

func TestLookupHint(t *testing.T) {
	SetHint("hinted", func() string { return "install the hinted plugin" })
	defer func() { regMu.Lock(); delete(hints, "hinted"); regMu.Unlock() }()
	for _, tc := range []struct {
		typ, want string
	}{
		{"tpu", "need a build with -tags pjrt"},
		{"cuda", "need a build with -tags pjrt"},
		{"xla", "tools/pjrt/fetch.sh"},
		{"hinted", "; install the hinted plugin"},
		{"nonesuch", "(registered: "},
	} {
		regMu.RLock()
		_, registered := registry[tc.typ]
		regMu.RUnlock()
		if registered {
			continue
		}
		_, err := Lookup(tc.typ)
		if !errors.Is(err, ErrUnknownDevice) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Lookup(%q) = %v, want ErrUnknownDevice mentioning %q", tc.typ, err, tc.want)
		}
		if tc.typ == "nonesuch" && strings.Contains(err.Error(), ";") {
			t.Errorf("Lookup(%q) = %v: a hint for a type nobody hinted", tc.typ, err)
		}
	}
}

func TestCachingAllocator(t *testing.T) {
	raw := 0
	a := &CachingAllocator{Raw: func(n int) (Buffer, error) { raw++; return make(hostBuf, n), nil }, RawFree: func(Buffer) {}}
	b1, _ := a.Alloc(100)
	a.Free(b1)
	b2, _ := a.Alloc(200) // same 512-byte class: reused
	if raw != 1 {
		t.Fatalf("raw allocations = %d, want 1 (cache reuse)", raw)
	}
	s := a.Stats()
	if s.Allocated != 512 || s.Reserved != 512 || s.PeakAllocated != 512 || s.NumAllocs != 2 {
		t.Fatalf("stats %+v", s)
	}
	a.Free(b2)
	a.EmptyCache()
	if s := a.Stats(); s.Reserved != 0 || s.Allocated != 0 {
		t.Fatalf("after EmptyCache %+v", s)
	}
	lim := &CachingAllocator{Raw: func(n int) (Buffer, error) { return make(hostBuf, n), nil }, Limit: 1024}
	if _, err := lim.Alloc(4096); !errors.Is(err, ErrOutOfMemory) {
		t.Fatalf("limit: %v", err)
	}
}

func TestStreamOrderAndError(t *testing.T) {
	var s Stream
	var mu sync.Mutex
	var order []int
	for i := 0; i < 100; i++ {
		i := i
		s.Enqueue("k", "", func() error { mu.Lock(); order = append(order, i); mu.Unlock(); return nil })
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	for i, v := range order {
		if v != i {
			t.Fatalf("out of order at %d: %d", i, v)
		}
	}
	s.Enqueue("bad", "x.go:7", func() error { return fmt.Errorf("boom") })
	ran := false
	s.Enqueue("after", "", func() error { ran = true; return nil })
	err := s.Sync()
	if err == nil || err.Error() != "bad (launched at x.go:7): boom" {
		t.Fatalf("err = %v", err)
	}
	if ran {
		t.Fatal("work after a failure ran")
	}
	if err := s.Sync(); err != nil {
		t.Fatalf("error not cleared: %v", err)
	}
	s.Enqueue("panics", "", func() error { panic("oops") })
	if err := s.Sync(); err == nil {
		t.Fatal("panic not reported")
	}
}

func TestStreamConcurrent(t *testing.T) {
	var s Stream
	var wg sync.WaitGroup
	var mu sync.Mutex
	n := 0
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				s.Enqueue("inc", "", func() error { mu.Lock(); n++; mu.Unlock(); return nil })
			}
			_ = s.Sync()
		}()
	}
	wg.Wait()
	if err := s.Sync(); err != nil || n != 1600 {
		t.Fatalf("n=%d err=%v", n, err)
	}
}

func TestSoftLimitReclaim(t *testing.T) {
	var a *CachingAllocator
	var held []Buffer
	reclaims := 0
	a = &CachingAllocator{
		Raw:       func(n int) (Buffer, error) { return make(hostBuf, n), nil },
		SoftLimit: 2048,
		Reclaim: func() {
			reclaims++
			for _, b := range held { // "unreachable" blocks come back
				a.Free(b)
			}
			held = nil
		},
	}
	for i := 0; i < 4; i++ {
		b, _ := a.Alloc(512)
		held = append(held, b)
	}
	// Reserved is 2048: the next miss reclaims and reuses a returned block.
	if _, err := a.Alloc(512); err != nil {
		t.Fatal(err)
	}
	if reclaims != 1 || a.Stats().Reserved != 2048 {
		t.Fatalf("reclaims %d, reserved %d", reclaims, a.Stats().Reserved)
	}
	// With nothing to reclaim the limit grows instead of collecting again.
	for i := 0; i < 8; i++ {
		if _, err := a.Alloc(512); err != nil {
			t.Fatal(err)
		}
	}
	if reclaims > 3 {
		t.Fatalf("reclaimed %d times: the soft limit does not grow", reclaims)
	}
}
