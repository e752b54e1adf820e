package testreq

import (
	"testing"
)

// fakeTB records whether Skipf or Fatalf was called.
type fakeTB struct {
	testing.TB
	skipped, failed bool
}

func (f *fakeTB) Helper()                      {}
func (f *fakeTB) Skipf(string, ...any)         { f.skipped = true }
func (f *fakeTB) Fatalf(string, ...any)        { f.failed = true }
func (f *fakeTB) Logf(format string, a ...any) {}

func TestMissing(t *testing.T) {
	for _, tc := range []struct {
		ci                 string
		wantSkip, wantFail bool
	}{
		{"true", false, true},
		{"", true, false},
		{"false", true, false},
	} {
		t.Setenv("CI", tc.ci)
		f := &fakeTB{}
		Missing(f, "x %s absent", "y")
		if f.skipped != tc.wantSkip || f.failed != tc.wantFail {
			t.Errorf("CI=%q: skipped %v failed %v, want %v %v", tc.ci, f.skipped, f.failed, tc.wantSkip, tc.wantFail)
		}
	}
}
