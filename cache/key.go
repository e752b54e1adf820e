package cache

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// ErrInvalidKey is wrapped by errors about a Key that cannot identify a
// compiled program (no fingerprint, a fingerprint that is not hex, no backend).
var ErrInvalidKey = errors.New("cache: invalid key")

// Input is the signature of one program input: its dtype name ("f32",
// "bf16", "i64", ...) and its dimensions.
type Input struct {
	DType string `json:"dtype"`
	Dims  []int  `json:"dims"`
}

// String formats the input as dtype[d0,d1,...], e.g. "f32[64,784]".
func (in Input) String() string {
	var b strings.Builder
	b.WriteString(in.DType)
	b.WriteByte('[')
	for i, d := range in.Dims {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(d))
	}
	b.WriteByte(']')
	return b.String()
}

// Key identifies one compiled program: everything that, if it changed,
// could change the executable the compiler produces.
//
// Two keys with the same fields have the same Hash; the order of Options
// does not matter (it is a map), the order of Inputs does.
type Key struct {
	// Fingerprint is the hex fingerprint of the graph structure (ops,
	// attributes, edges) computed by the tracer.
	Fingerprint string `json:"fingerprint"`
	// Inputs are the dtypes and dimensions of the program's inputs, in order.
	Inputs []Input `json:"inputs"`
	// Options are the compile options, matmul precision included
	// (e.g. "precision": "high").
	Options map[string]string `json:"options,omitempty"`
	// Backend is the backend name ("cpu", "tpu", "cuda", ...).
	Backend string `json:"backend"`
	// BackendVersion is the backend's (or its PJRT plugin's) version.
	BackendVersion string `json:"backend_version"`
	// GotpuVersion is the gotpu version (gotpu.Version) that compiled the program.
	GotpuVersion string `json:"gotpu_version"`
}

// keyEncodingTag starts the canonical encoding; bump it whenever the
// encoding changes so old hashes can never collide with new ones.
const keyEncodingTag = "gotpu-cache-key/v1"

// Validate reports whether k can identify a program: a non-empty hex
// fingerprint and a backend name. Errors wrap ErrInvalidKey.
func (k Key) Validate() error {
	if k.Fingerprint == "" {
		return fmt.Errorf("%w: empty fingerprint", ErrInvalidKey)
	}
	if _, err := hex.DecodeString(k.Fingerprint); err != nil {
		return fmt.Errorf("%w: fingerprint %q is not hex", ErrInvalidKey, k.Fingerprint)
	}
	if k.Backend == "" {
		return fmt.Errorf("%w: empty backend name", ErrInvalidKey)
	}
	for i, in := range k.Inputs {
		if in.DType == "" {
			return fmt.Errorf("%w: input %d has no dtype", ErrInvalidKey, i)
		}
		for _, d := range in.Dims {
			if d < 0 {
				return fmt.Errorf("%w: input %d has negative dimension %d", ErrInvalidKey, i, d)
			}
		}
	}
	return nil
}

// Canonical returns the canonical byte encoding of k that Hash digests:
// a version tag, then every field length-prefixed, with options sorted by
// name and the fingerprint lower-cased. Distinct keys have distinct
// encodings (no separator ambiguity).
func (k Key) Canonical() []byte {
	var b []byte
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	num := func(n int) { b = binary.AppendVarint(b, int64(n)) }

	str(keyEncodingTag)
	str(strings.ToLower(k.Fingerprint))
	num(len(k.Inputs))
	for _, in := range k.Inputs {
		str(in.DType)
		num(len(in.Dims))
		for _, d := range in.Dims {
			num(d)
		}
	}
	names := make([]string, 0, len(k.Options))
	for n := range k.Options {
		names = append(names, n)
	}
	sort.Strings(names)
	num(len(names))
	for _, n := range names {
		str(n)
		str(k.Options[n])
	}
	str(k.Backend)
	str(k.BackendVersion)
	str(k.GotpuVersion)
	return b
}

// Hash returns the lower-case hex SHA-256 of k's canonical encoding. It is
// stable across processes, machines and gotpu builds that use the same
// encoding version, and names the key's files in the disk and remote tiers.
func (k Key) Hash() string {
	sum := sha256.Sum256(k.Canonical())
	return hex.EncodeToString(sum[:])
}

// String is a short human-readable form of k for logs and errors.
func (k Key) String() string {
	var b strings.Builder
	fp := k.Fingerprint
	if len(fp) > 16 {
		fp = fp[:16]
	}
	fmt.Fprintf(&b, "key %s (fingerprint %s, inputs [", k.Hash()[:16], fp)
	for i, in := range k.Inputs {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(in.String())
	}
	fmt.Fprintf(&b, "], backend %s", k.Backend)
	if k.BackendVersion != "" {
		b.WriteString("/" + k.BackendVersion)
	}
	names := make([]string, 0, len(k.Options))
	for n := range k.Options {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, ", %s=%s", n, k.Options[n])
	}
	b.WriteByte(')')
	return b.String()
}
