package sample

import (
	"errors"
	"strings"
	"testing"
)

func TestStopStreaming(t *testing.T) {
	cases := []struct {
		name    string
		stops   []string
		pieces  []string
		emitted []string // what each Push returns
		stopped int      // index of the piece that completed a stop, -1 if none
		matched string
		flush   string
	}{
		{"no stops", nil, []string{"Hello", ", ", "world"}, []string{"Hello", ", ", "world"}, -1, "", ""},
		{"whole stop in a piece", []string{"\n\n"}, []string{"one", " two\n\nthree"}, []string{"one", " two"}, 1, "\n\n", ""},
		{"stop split across pieces", []string{"###"}, []string{"abc#", "#", "#def"}, []string{"abc", "", ""}, 2, "###", ""},
		{"prefix that is not a stop", []string{"###"}, []string{"a#", "#b", "c"}, []string{"a", "##b", "c"}, -1, "", ""},
		{"held at the end", []string{"END"}, []string{"the E", "N"}, []string{"the ", ""}, -1, "", "EN"},
		{"stop at the very start", []string{"<|"}, []string{"<", "|x"}, []string{"", ""}, 1, "<|", ""},
		{"multiple stops, first to complete wins", []string{"abcd", "bc"}, []string{"xab", "cd"}, []string{"x", "a"}, 1, "bc", ""},
		{"same chunking-independence in one piece", []string{"abcd", "bc"}, []string{"xabcd"}, []string{"xa"}, 0, "bc", ""},
		{"same end: longer stop wins", []string{"c", "abc"}, []string{"zab", "c"}, []string{"z", ""}, 1, "abc", ""},
		{"overlapping prefix", []string{"aab"}, []string{"aa", "a", "ab"}, []string{"", "a", "a"}, 2, "aab", ""},
		{"unicode stop", []string{"終わり"}, []string{"これで終", "わ", "り。"}, []string{"これで", "", ""}, 2, "終わり", ""},
		{"unicode near miss", []string{"終わり"}, []string{"終わ", "る"}, []string{"", "終わる"}, -1, "", ""},
		{"emoji stop split mid-character", []string{"🛑"}, []string{"go \xf0\x9f", "\x9b\x91 no"}, []string{"go ", ""}, 1, "🛑", ""},
		{"incomplete character held", nil, []string{"caf\xc3", "\xa9!"}, []string{"caf", "é!"}, -1, "", ""},
		{"incomplete character flushed", nil, []string{"ok\xe2\x82"}, []string{"ok"}, -1, "", "\xe2\x82"},
		{"after stop nothing more", []string{"."}, []string{"a.b", "c"}, []string{"a", ""}, 0, ".", ""},
		{"empty pieces", []string{"xy"}, []string{"", "x", "", "y"}, []string{"", "", "", ""}, 3, "xy", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := NewStop([]int{2}, c.stops)
			if err != nil {
				t.Fatal(err)
			}
			stoppedAt := -1
			for i, p := range c.pieces {
				text, done := s.Push(p)
				if text != c.emitted[i] {
					t.Errorf("piece %d (%q): emitted %q, want %q", i, p, text, c.emitted[i])
				}
				if done && stoppedAt < 0 {
					stoppedAt = i
				}
				if stoppedAt >= 0 && !done {
					t.Errorf("piece %d: not stopped after a stop", i)
				}
			}
			if stoppedAt != c.stopped {
				t.Errorf("stopped at piece %d, want %d", stoppedAt, c.stopped)
			}
			if s.Matched() != c.matched || s.Stopped() != (c.stopped >= 0) {
				t.Errorf("Matched() = %q, Stopped() = %v; want %q", s.Matched(), s.Stopped(), c.matched)
			}
			if f := s.Flush(); f != c.flush {
				t.Errorf("Flush() = %q, want %q", f, c.flush)
			}
		})
	}
}

// TestStopChunking checks that the shown text does not depend on how the
// text is cut into pieces.
func TestStopChunking(t *testing.T) {
	stops := []string{"STOP", "TOP!", "\n\nUser:", "ü"}
	texts := []string{
		"Hello there. STO and STOP here",
		"no stop at all, S T O P, TO",
		"answer\n\nUse\n\nUser: more",
		"xTOP! and STOP",
		"grüße",
		"ending with ST",
	}
	for _, text := range texts {
		var want string
		var wantMatch string
		for cut := 1; cut <= len(text); cut++ {
			s, err := NewStop(nil, stops)
			if err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			for i := 0; i < len(text); i += cut {
				piece, _ := s.Push(text[i:min(i+cut, len(text))])
				out.WriteString(piece)
			}
			out.WriteString(s.Flush())
			if cut == 1 {
				want, wantMatch = out.String(), s.Matched()
				continue
			}
			if out.String() != want || s.Matched() != wantMatch {
				t.Errorf("%q in pieces of %d: %q (%q), byte by byte %q (%q)", text, cut, out.String(), s.Matched(), want, wantMatch)
			}
		}
		t.Logf("%q -> %q (stop %q)", text, want, wantMatch)
	}
}

func TestStopEOSAndErrors(t *testing.T) {
	s, err := NewStop([]int{0, 151643}, []string{"a", "a"})
	if err != nil {
		t.Fatal(err)
	}
	if !s.IsEOS(151643) || !s.IsEOS(0) || s.IsEOS(1) {
		t.Errorf("IsEOS wrong")
	}
	s.Push("xa")
	s.Reset()
	if s.Stopped() || s.Matched() != "" {
		t.Errorf("Reset kept the stop")
	}
	if text, done := s.Push("bc"); text != "bc" || done {
		t.Errorf("after Reset: %q, %v", text, done)
	}
	for _, bad := range [][]string{{""}, {"ok", "\xff"}} {
		if _, err := NewStop(nil, bad); !errors.Is(err, ErrInvalidStop) {
			t.Errorf("NewStop(%q) error %v, want ErrInvalidStop", bad, err)
		}
	}
}
