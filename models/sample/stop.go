package sample

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// ErrInvalidStop is wrapped by NewStop's errors.
var ErrInvalidStop = errors.New("sample: invalid stop condition")

// Stop tracks the stop conditions of one generated sequence: end-of-sequence
// token ids, and stop strings in the decoded text as it streams.
//
// Feed each decoded text piece to Push, show what it returns, and stop
// generating when it reports a match or IsEOS reports the token. When
// generation ends without a stop string (end-of-sequence token, token
// limit), call Flush for the text still held back.
//
// Push holds back the longest suffix of the text so far that is a prefix of
// some stop string (it may turn out to be the start of one), and an
// incomplete UTF-8 sequence at the end (a byte-level token may end inside a
// character). When a stop string completes, the text before it is returned
// and the stop string and anything after it are dropped. If several stop
// strings occur, the one that completes first in the text wins (the earliest
// start breaks ties), so the outcome does not depend on how the text is split
// into pieces. A Stop is not safe for concurrent use.
type Stop struct {
	eos     []int
	stops   []string
	pending string // text received but not yet returned
	matched string
	done    bool
}

// NewStop returns a Stop for the given end-of-sequence ids and stop
// strings. Stop strings must be non-empty valid UTF-8; duplicates are
// ignored.
func NewStop(eos []int, stops []string) (*Stop, error) {
	s := &Stop{eos: slices.Clone(eos)}
	for i, t := range stops {
		if t == "" {
			return nil, fmt.Errorf("%w: stop string %d is empty", ErrInvalidStop, i)
		}
		if !utf8.ValidString(t) {
			return nil, fmt.Errorf("%w: stop string %d (%q) is not valid UTF-8", ErrInvalidStop, i, t)
		}
		if !slices.Contains(s.stops, t) {
			s.stops = append(s.stops, t)
		}
	}
	return s, nil
}

// IsEOS reports whether id is one of the end-of-sequence ids.
func (s *Stop) IsEOS(id int) bool { return slices.Contains(s.eos, id) }

// Push adds the next decoded piece and returns the text that is now safe to
// show. stopped is true once a stop string has completed (in this piece or
// before); the returned text then ends just before the stop string, and
// later calls return "" and true.
func (s *Stop) Push(piece string) (text string, stopped bool) {
	if s.done {
		return "", true
	}
	buf := s.pending + piece
	// The held-back text contains no complete stop string, so any
	// occurrence in buf ends inside piece.
	start, end := -1, -1
	for _, t := range s.stops {
		i := strings.Index(buf, t)
		if i < 0 {
			continue
		}
		if e := i + len(t); end < 0 || e < end || (e == end && i < start) {
			start, end, s.matched = i, e, t
		}
	}
	if start >= 0 {
		s.done = true
		s.pending = ""
		return buf[:start], true
	}
	safe := len(buf) - s.holdBack(buf)
	s.pending = buf[safe:]
	return buf[:safe], false
}

// holdBack returns the length of the suffix of buf to keep: from the
// earliest position where the rest of buf is a proper prefix of a stop
// string, or an incomplete UTF-8 sequence at the end.
func (s *Stop) holdBack(buf string) int {
	longest := 0
	for _, t := range s.stops {
		longest = max(longest, len(t)-1)
	}
	for i := max(len(buf)-longest, 0); i < len(buf); i++ {
		for _, t := range s.stops {
			if len(buf)-i < len(t) && strings.HasPrefix(t, buf[i:]) {
				return len(buf) - i
			}
		}
	}
	// An incomplete character: a lead byte (or lead and continuation bytes)
	// at the end that more bytes could complete.
	for k := 1; k <= utf8.UTFMax-1 && k <= len(buf); k++ {
		c := buf[len(buf)-k]
		if c < utf8.RuneSelf {
			break
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRuneInString(buf[len(buf)-k:]) {
				return k
			}
			break
		}
	}
	return 0
}

// Flush returns the text held back and forgets it, for when generation ends
// for a reason other than a stop string (it is "" after a stop string).
func (s *Stop) Flush() string {
	t := s.pending
	s.pending = ""
	return t
}

// Matched returns the stop string that ended the text, or "" if none has.
func (s *Stop) Matched() string { return s.matched }

// Stopped reports whether a stop string has completed.
func (s *Stop) Stopped() bool { return s.done }

// Reset prepares s for a new sequence with the same conditions.
func (s *Stop) Reset() {
	s.pending, s.matched, s.done = "", "", false
}
