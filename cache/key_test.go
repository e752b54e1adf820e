package cache

import (
	"errors"
	"testing"
)

func baseKey() Key {
	return Key{
		Fingerprint:    "00ff10aa",
		Inputs:         []Input{{DType: "f32", Dims: []int{64, 784}}, {DType: "i64", Dims: []int{64}}},
		Options:        map[string]string{"precision": "highest", "opt_level": "2"},
		Backend:        "cpu",
		BackendVersion: "1",
		GotpuVersion:   "0.1.0-dev",
	}
}

func TestKeyHashStable(t *testing.T) {
	k := baseKey()
	// Same content, options map built in the other order, fingerprint in
	// upper case: the same key.
	k2 := baseKey()
	k2.Options = map[string]string{}
	k2.Options["opt_level"] = "2"
	k2.Options["precision"] = "highest"
	k2.Fingerprint = "00FF10AA"
	if k.Hash() != k2.Hash() {
		t.Fatalf("equal keys hash differently: %s vs %s", k.Hash(), k2.Hash())
	}
	for i := 0; i < 20; i++ { // map iteration order is random
		if k.Hash() != baseKey().Hash() {
			t.Fatal("hash is not deterministic")
		}
	}
	if len(k.Hash()) != 64 || !isKeyHash(k.Hash()) {
		t.Fatalf("hash %q is not 64 lower-case hex digits", k.Hash())
	}
	// Pinned: the encoding is an on-disk format; changing it must be a
	// deliberate bump of keyEncodingTag (and of this value). The value was
	// computed independently by a Python re-implementation of Canonical
	// (length-prefixed uvarint strings, zig-zag varint integers, sorted
	// options) to check the encoding is the documented one.
	const pinned = "bc7afc30d737a29db4101340c1c6ebaeaa372baab5cd4f9065b383df3e36c6ac"
	if got := k.Hash(); got != pinned {
		t.Errorf("hash of the base key changed: %s, pinned %s (bump keyEncodingTag if intended)", got, pinned)
	}
}

func TestKeyHashDistinguishesFields(t *testing.T) {
	tests := []struct {
		name string
		mod  func(k *Key)
	}{
		{"fingerprint", func(k *Key) { k.Fingerprint = "00ff10ab" }},
		{"input dtype", func(k *Key) { k.Inputs[0].DType = "bf16" }},
		{"input dims", func(k *Key) { k.Inputs[0].Dims = []int{64, 785} }},
		{"input rank", func(k *Key) { k.Inputs[0].Dims = []int{64, 784, 1} }},
		{"dims move between inputs", func(k *Key) {
			k.Inputs = []Input{{DType: "f32", Dims: []int{64}}, {DType: "i64", Dims: []int{784, 64}}}
		}},
		{"input order", func(k *Key) { k.Inputs[0], k.Inputs[1] = k.Inputs[1], k.Inputs[0] }},
		{"no inputs", func(k *Key) { k.Inputs = nil }},
		{"precision", func(k *Key) { k.Options["precision"] = "high" }},
		{"extra option", func(k *Key) { k.Options["fast_math"] = "1" }},
		{"option name/value boundary", func(k *Key) {
			k.Options = map[string]string{"precisionh": "ighest", "opt_level": "2"}
		}},
		{"backend", func(k *Key) { k.Backend = "tpu" }},
		{"backend version", func(k *Key) { k.BackendVersion = "2" }},
		{"backend/version boundary", func(k *Key) { k.Backend = "cpu1"; k.BackendVersion = "" }},
		{"gotpu version", func(k *Key) { k.GotpuVersion = "0.2.0" }},
	}
	seen := map[string]string{baseKey().Hash(): "base"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := baseKey()
			tt.mod(&k)
			h := k.Hash()
			if prev, ok := seen[h]; ok {
				t.Fatalf("hash collides with %q", prev)
			}
			seen[h] = tt.name
		})
	}
}

func TestKeyValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(k *Key)
		ok   bool
	}{
		{"valid", func(k *Key) {}, true},
		{"empty fingerprint", func(k *Key) { k.Fingerprint = "" }, false},
		{"non-hex fingerprint", func(k *Key) { k.Fingerprint = "xyz" }, false},
		{"odd-length fingerprint", func(k *Key) { k.Fingerprint = "abc" }, false},
		{"no backend", func(k *Key) { k.Backend = "" }, false},
		{"negative dim", func(k *Key) { k.Inputs[0].Dims[1] = -1 }, false},
		{"no dtype", func(k *Key) { k.Inputs[1].DType = "" }, false},
		{"scalar input", func(k *Key) { k.Inputs[1].Dims = nil }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := baseKey()
			tt.mod(&k)
			err := k.Validate()
			if tt.ok != (err == nil) {
				t.Fatalf("Validate() = %v, want ok=%v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalidKey) {
				t.Fatalf("error %v does not wrap ErrInvalidKey", err)
			}
		})
	}
}

func TestKeyString(t *testing.T) {
	s := baseKey().String()
	for _, want := range []string{"f32[64,784]", "i64[64]", "backend cpu/1", "precision=highest", baseKey().Hash()[:16]} {
		if !contains(s, want) {
			t.Errorf("String() = %q, missing %q", s, want)
		}
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
