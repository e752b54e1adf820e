package cache

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// ErrCorrupt is wrapped by errors about a stored entry that fails
// validation: bad magic or version, a key hash that does not match its
// name, a wrong length (truncated or extended) or a checksum mismatch.
// A corrupt entry is never returned.
var ErrCorrupt = errors.New("cache: corrupt entry")

// Entry layout, version 1 (all integers little-endian):
//
//	offset size field
//	0      8    magic "GOTPUCE\n"
//	8      4    format version (1)
//	12     4    metadata length M
//	16     8    payload length P
//	24     32   key hash (raw SHA-256 of Key.Canonical)
//	56     32   SHA-256 of bytes [0,56) ++ metadata ++ payload
//	88     M    metadata (JSON of EntryMeta)
//	88+M   P    payload
//
// The checksum covers the header fields as well as the data, so a flipped
// bit anywhere in the file is detected, and the exact total length is
// checked, so a truncated or extended file is detected.
const (
	entryMagic      = "GOTPUCE\n"
	entryVersion    = 1
	entryHeaderSize = 88
	maxMetaSize     = 1 << 20
)

// EntryMeta is the metadata stored in every entry: the full key, so that
// `gotpu cache ls` can show what was compiled, and when and how long the
// compile took.
type EntryMeta struct {
	Key         Key           `json:"key"`
	Created     time.Time     `json:"created"`
	CompileTime time.Duration `json:"compile_ns"`
}

// EntryHeader is the decoded fixed-size header of an entry.
type EntryHeader struct {
	Version    uint32
	MetaLen    uint32
	PayloadLen uint64
	KeyHash    string // lower-case hex
	Checksum   [32]byte
}

// Size returns the total size of the entry the header describes.
func (h EntryHeader) Size() int64 {
	return entryHeaderSize + int64(h.MetaLen) + int64(h.PayloadLen)
}

// encodeEntryPrefix returns the header and metadata of an entry for payload;
// the full entry is the prefix followed by the payload.
func encodeEntryPrefix(keyHash string, meta EntryMeta, payload []byte) ([]byte, error) {
	raw, err := hex.DecodeString(keyHash)
	if err != nil || len(raw) != sha256.Size {
		return nil, fmt.Errorf("%w: key hash %q is not a SHA-256 hex digest", ErrInvalidKey, keyHash)
	}
	m, err := json.Marshal(meta)
	if err != nil {
		return nil, fmt.Errorf("cache: encode entry metadata: %w", err)
	}
	if len(m) > maxMetaSize {
		return nil, fmt.Errorf("%w: metadata is %d bytes, more than the %d allowed", ErrInvalidKey, len(m), maxMetaSize)
	}
	buf := make([]byte, entryHeaderSize, entryHeaderSize+len(m))
	copy(buf[0:8], entryMagic)
	binary.LittleEndian.PutUint32(buf[8:12], entryVersion)
	binary.LittleEndian.PutUint32(buf[12:16], uint32(len(m)))
	binary.LittleEndian.PutUint64(buf[16:24], uint64(len(payload)))
	copy(buf[24:56], raw)
	h := sha256.New()
	h.Write(buf[:56])
	h.Write(m)
	h.Write(payload)
	copy(buf[56:88], h.Sum(nil))
	return append(buf, m...), nil
}

// encodeEntry returns a complete entry.
func encodeEntry(keyHash string, meta EntryMeta, payload []byte) ([]byte, error) {
	p, err := encodeEntryPrefix(keyHash, meta, payload)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(p)+len(payload))
	return append(append(out, p...), payload...), nil
}

// parseHeader decodes and sanity-checks a fixed-size header.
func parseHeader(b []byte) (EntryHeader, error) {
	var h EntryHeader
	if len(b) < entryHeaderSize {
		return h, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", ErrCorrupt, len(b), entryHeaderSize)
	}
	if string(b[0:8]) != entryMagic {
		return h, fmt.Errorf("%w: bad magic %q", ErrCorrupt, b[0:8])
	}
	h.Version = binary.LittleEndian.Uint32(b[8:12])
	if h.Version != entryVersion {
		return h, fmt.Errorf("%w: format version %d, want %d", ErrCorrupt, h.Version, entryVersion)
	}
	h.MetaLen = binary.LittleEndian.Uint32(b[12:16])
	if h.MetaLen > maxMetaSize {
		return h, fmt.Errorf("%w: metadata length %d exceeds %d", ErrCorrupt, h.MetaLen, maxMetaSize)
	}
	h.PayloadLen = binary.LittleEndian.Uint64(b[16:24])
	if h.PayloadLen > 1<<50 {
		return h, fmt.Errorf("%w: payload length %d is implausible", ErrCorrupt, h.PayloadLen)
	}
	h.KeyHash = hex.EncodeToString(b[24:56])
	copy(h.Checksum[:], b[56:88])
	return h, nil
}

// decodeEntry validates a complete entry read from storage and returns its
// metadata and payload (which aliases data). wantHash is the key hash the
// entry was stored under. Every failure wraps ErrCorrupt.
func decodeEntry(data []byte, wantHash string) (EntryMeta, []byte, error) {
	var meta EntryMeta
	h, err := parseHeader(data)
	if err != nil {
		return meta, nil, err
	}
	if h.KeyHash != wantHash {
		return meta, nil, fmt.Errorf("%w: header names key %s, stored as %s", ErrCorrupt, h.KeyHash, wantHash)
	}
	if int64(len(data)) != h.Size() {
		return meta, nil, fmt.Errorf("%w: %d bytes, header says %d (truncated or extended)", ErrCorrupt, len(data), h.Size())
	}
	sum := sha256.New()
	sum.Write(data[:56])
	sum.Write(data[entryHeaderSize:])
	if !bytes.Equal(sum.Sum(nil), h.Checksum[:]) {
		return meta, nil, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	mEnd := entryHeaderSize + int(h.MetaLen)
	if err := json.Unmarshal(data[entryHeaderSize:mEnd], &meta); err != nil {
		return meta, nil, fmt.Errorf("%w: metadata: %v", ErrCorrupt, err)
	}
	if meta.Key.Hash() != wantHash {
		return meta, nil, fmt.Errorf("%w: metadata key hashes to %s, stored as %s", ErrCorrupt, meta.Key.Hash(), wantHash)
	}
	return meta, data[mEnd:], nil
}

// readEntryInfo reads only the header and metadata of an entry (not the
// payload, which is not checked against the checksum).
func readEntryInfo(r io.Reader) (EntryHeader, EntryMeta, error) {
	var meta EntryMeta
	buf := make([]byte, entryHeaderSize)
	if _, err := io.ReadFull(r, buf); err != nil {
		return EntryHeader{}, meta, fmt.Errorf("%w: reading header: %v", ErrCorrupt, err)
	}
	h, err := parseHeader(buf)
	if err != nil {
		return h, meta, err
	}
	m := make([]byte, h.MetaLen)
	if _, err := io.ReadFull(r, m); err != nil {
		return h, meta, fmt.Errorf("%w: reading metadata: %v", ErrCorrupt, err)
	}
	if err := json.Unmarshal(m, &meta); err != nil {
		return h, meta, fmt.Errorf("%w: metadata: %v", ErrCorrupt, err)
	}
	return h, meta, nil
}
