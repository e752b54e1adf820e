package cache

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

func testEntry(t *testing.T, payload []byte) (string, []byte) {
	t.Helper()
	k := baseKey()
	h := k.Hash()
	data, err := encodeEntry(h, EntryMeta{Key: k, Created: time.Unix(1700000000, 0).UTC(), CompileTime: 3 * time.Millisecond}, payload)
	if err != nil {
		t.Fatal(err)
	}
	return h, data
}

func TestEntryRoundTrip(t *testing.T) {
	for _, payload := range [][]byte{nil, {}, []byte("x"), bytes.Repeat([]byte("executable"), 1000)} {
		h, data := testEntry(t, payload)
		meta, got, err := decodeEntry(data, h)
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if !bytes.Equal(got, payload) {
			t.Fatalf("payload %q, want %q", got, payload)
		}
		if meta.Key.Hash() != h || meta.CompileTime != 3*time.Millisecond {
			t.Fatalf("metadata %+v does not round-trip", meta)
		}
		hd, im, err := readEntryInfo(bytes.NewReader(data))
		if err != nil || hd.Size() != int64(len(data)) || hd.PayloadLen != uint64(len(payload)) || im.Key.Hash() != h {
			t.Fatalf("readEntryInfo = %+v, %+v, %v", hd, im, err)
		}
	}
}

// Every single flipped bit, every truncation and any extension of an
// entry must be detected.
func TestEntryCorruptionDetected(t *testing.T) {
	h, data := testEntry(t, []byte("payload bytes of a small executable"))
	for i := range data {
		for _, bit := range []byte{0x01, 0x80} {
			c := bytes.Clone(data)
			c[i] ^= bit
			if _, _, err := decodeEntry(c, h); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("flipping bit %#x of byte %d: err = %v, want ErrCorrupt", bit, i, err)
			}
		}
	}
	for n := 0; n < len(data); n++ {
		if _, _, err := decodeEntry(data[:n], h); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d bytes: err = %v, want ErrCorrupt", n, err)
		}
	}
	if _, _, err := decodeEntry(append(bytes.Clone(data), 0), h); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("extended: err = %v, want ErrCorrupt", err)
	}
	other := baseKey()
	other.Backend = "tpu"
	if _, _, err := decodeEntry(data, other.Hash()); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("entry stored under another key: err = %v, want ErrCorrupt", err)
	}
}

func FuzzDecodeEntry(f *testing.F) {
	k := baseKey()
	h := k.Hash()
	good, _ := encodeEntry(h, EntryMeta{Key: k}, []byte("exe"))
	f.Add(good)
	f.Add(good[:40])
	f.Add([]byte(entryMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		meta, p, err := decodeEntry(data, h)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		// Anything accepted is for this key and has the declared payload.
		hd, _, ierr := readEntryInfo(bytes.NewReader(data))
		if meta.Key.Hash() != h || ierr != nil || hd.PayloadLen != uint64(len(p)) {
			t.Fatalf("accepted an inconsistent entry: %+v, %v", hd, ierr)
		}
	})
}
