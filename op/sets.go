package op

import (
	"strings"

	"github.com/gotpu/gotpu/dtype"
)

// Set is a set of dtypes.
type Set uint16

// Common dtype sets.
const (
	SetFloats  Set = 1<<dtype.F16 | 1<<dtype.BF16 | 1<<dtype.F32 | 1<<dtype.F64
	SetInts    Set = 1<<dtype.U8 | 1<<dtype.I8 | 1<<dtype.I16 | 1<<dtype.I32 | 1<<dtype.I64
	SetBool    Set = 1 << dtype.Bool
	SetNumeric     = SetFloats | SetInts
	SetIntBool     = SetInts | SetBool
	SetAll         = SetNumeric | SetBool
)

// Has reports whether d is in s. The zero Set means "all dtypes".
func (s Set) Has(d dtype.DType) bool { return s == 0 || s&(1<<d) != 0 }

// List returns the dtypes in s in promotion order.
func (s Set) List() []dtype.DType {
	if s == 0 {
		s = SetAll
	}
	var out []dtype.DType
	for _, d := range dtype.All {
		if s&(1<<d) != 0 {
			out = append(out, d)
		}
	}
	return out
}

func (s Set) String() string {
	var parts []string
	for _, d := range s.List() {
		parts = append(parts, d.String())
	}
	return strings.Join(parts, ",")
}
