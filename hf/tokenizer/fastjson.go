package tokenizer

import (
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// A small JSON scanner for the large parts of tokenizer.json (the vocabulary
// and merges, hundreds of thousands of entries), several times faster than
// encoding/json with reflection. Small components still use encoding/json.

func jsonErr(i int, what string) error {
	return fmt.Errorf("%w: JSON offset %d: %s", ErrMalformed, i, what)
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// scanString returns the decoded JSON string starting at b[i] (a quote) and
// the index after its closing quote.
func scanString(b []byte, i int) (string, int, error) {
	if i >= len(b) || b[i] != '"' {
		return "", i, jsonErr(i, "expected a string")
	}
	start := i + 1
	j := start
	for j < len(b) && b[j] != '"' && b[j] != '\\' && b[j] >= 0x20 {
		j++
	}
	if j < len(b) && b[j] == '"' {
		if !utf8.Valid(b[start:j]) {
			return string([]rune(string(b[start:j]))), j + 1, nil
		}
		return string(b[start:j]), j + 1, nil
	}
	buf := append([]byte(nil), b[start:j]...)
	for j < len(b) {
		c := b[j]
		switch {
		case c == '"':
			if !utf8.Valid(buf) {
				buf = []byte(string([]rune(string(buf))))
			}
			return string(buf), j + 1, nil
		case c < 0x20:
			return "", j, jsonErr(j, "control character in string")
		case c != '\\':
			buf = append(buf, c)
			j++
			continue
		}
		if j+1 >= len(b) {
			return "", j, jsonErr(j, "unterminated escape")
		}
		e := b[j+1]
		j += 2
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, n, ok := hex4(b, j)
			if !ok {
				return "", j, jsonErr(j, "bad \\u escape")
			}
			j = n
			if utf16.IsSurrogate(r) {
				if r2, n2, ok := hex4After(b, j); ok {
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						r, j = d, n2
					} else {
						r = utf8.RuneError
					}
				} else {
					r = utf8.RuneError
				}
			}
			buf = utf8.AppendRune(buf, r)
		default:
			return "", j, jsonErr(j, "bad escape")
		}
	}
	return "", j, jsonErr(j, "unterminated string")
}

func hex4(b []byte, i int) (rune, int, bool) {
	if i+4 > len(b) {
		return 0, i, false
	}
	v, err := strconv.ParseUint(string(b[i:i+4]), 16, 32)
	if err != nil {
		return 0, i, false
	}
	return rune(v), i + 4, true
}

func hex4After(b []byte, i int) (rune, int, bool) {
	if i+6 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
		return 0, i, false
	}
	return hex4(b, i+2)
}

// scanNumber returns the bytes of the number at b[i].
func scanNumber(b []byte, i int) ([]byte, int) {
	j := i
	for j < len(b) {
		c := b[j]
		if c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			j++
			continue
		}
		break
	}
	return b[i:j], j
}

// parseVocabFast parses a {"token": id, ...} object.
func parseVocabFast(b []byte) (map[string]uint32, error) {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, jsonErr(i, "vocab must be an object")
	}
	m := make(map[string]uint32, len(b)/12)
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return m, nil
	}
	for {
		key, j, err := scanString(b, skipWS(b, i))
		if err != nil {
			return nil, err
		}
		j = skipWS(b, j)
		if j >= len(b) || b[j] != ':' {
			return nil, jsonErr(j, "expected ':'")
		}
		num, k := scanNumber(b, skipWS(b, j+1))
		id, err := strconv.ParseUint(string(num), 10, 32)
		if err != nil {
			return nil, jsonErr(k, fmt.Sprintf("vocab id of %q is not a non-negative integer", key))
		}
		m[key] = uint32(id)
		k = skipWS(b, k)
		if k >= len(b) {
			return nil, jsonErr(k, "unterminated vocab")
		}
		if b[k] == '}' {
			return m, nil
		}
		if b[k] != ',' {
			return nil, jsonErr(k, "expected ',' or '}'")
		}
		i = k + 1
	}
}

// parseMergesFast parses ["a b", ...] or [["a", "b"], ...]. Lines starting
// with #version are skipped.
func parseMergesFast(b []byte) ([][2]string, error) {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '[' {
		return nil, jsonErr(i, "merges must be an array")
	}
	out := make([][2]string, 0, len(b)/12)
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return out, nil
	}
	for n := 0; ; n++ {
		i = skipWS(b, i)
		if i >= len(b) {
			return nil, jsonErr(i, "unterminated merges")
		}
		switch b[i] {
		case '"':
			s, j, err := scanString(b, i)
			if err != nil {
				return nil, err
			}
			i = j
			if len(s) >= 8 && s[:8] == "#version" {
				break
			}
			a, c, ok := splitMerge(s)
			if !ok {
				return nil, fmt.Errorf("%w: merges[%d] %q is not two space-separated tokens", ErrMalformed, n, s)
			}
			out = append(out, [2]string{a, c})
		case '[':
			a, j, err := scanString(b, skipWS(b, i+1))
			if err != nil {
				return nil, fmt.Errorf("merges[%d]: %w", n, err)
			}
			j = skipWS(b, j)
			if j >= len(b) || b[j] != ',' {
				return nil, jsonErr(j, fmt.Sprintf("merges[%d] must be a pair", n))
			}
			c, k, err := scanString(b, skipWS(b, j+1))
			if err != nil {
				return nil, fmt.Errorf("merges[%d]: %w", n, err)
			}
			k = skipWS(b, k)
			if k >= len(b) || b[k] != ']' {
				return nil, jsonErr(k, fmt.Sprintf("merges[%d] must be a pair", n))
			}
			out = append(out, [2]string{a, c})
			i = k + 1
		default:
			return nil, jsonErr(i, fmt.Sprintf("merges[%d] must be \"a b\" or [a, b]", n))
		}
		i = skipWS(b, i)
		if i >= len(b) {
			return nil, jsonErr(i, "unterminated merges")
		}
		if b[i] == ']' {
			return out, nil
		}
		if b[i] != ',' {
			return nil, jsonErr(i, "expected ',' or ']'")
		}
		i++
	}
}

// parseUnigramVocabFast parses [["piece", score], ...].
func parseUnigramVocabFast(b []byte) ([]string, []float64, error) {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '[' {
		return nil, nil, jsonErr(i, "Unigram vocab must be an array")
	}
	var pieces []string
	var scores []float64
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return pieces, scores, nil
	}
	for n := 0; ; n++ {
		i = skipWS(b, i)
		if i >= len(b) || b[i] != '[' {
			return nil, nil, jsonErr(i, fmt.Sprintf("Unigram vocab[%d] must be [piece, score]", n))
		}
		p, j, err := scanString(b, skipWS(b, i+1))
		if err != nil {
			return nil, nil, fmt.Errorf("Unigram vocab[%d]: %w", n, err)
		}
		j = skipWS(b, j)
		if j >= len(b) || b[j] != ',' {
			return nil, nil, jsonErr(j, fmt.Sprintf("Unigram vocab[%d] must be [piece, score]", n))
		}
		num, k := scanNumber(b, skipWS(b, j+1))
		score, err := strconv.ParseFloat(string(num), 64)
		if err != nil {
			return nil, nil, jsonErr(k, fmt.Sprintf("Unigram vocab[%d] score", n))
		}
		k = skipWS(b, k)
		if k >= len(b) || b[k] != ']' {
			return nil, nil, jsonErr(k, fmt.Sprintf("Unigram vocab[%d] must be [piece, score]", n))
		}
		pieces = append(pieces, p)
		scores = append(scores, score)
		i = skipWS(b, k+1)
		if i >= len(b) {
			return nil, nil, jsonErr(i, "unterminated Unigram vocab")
		}
		if b[i] == ']' {
			return pieces, scores, nil
		}
		if b[i] != ',' {
			return nil, nil, jsonErr(i, "expected ',' or ']'")
		}
		i++
	}
}

// skipValue returns the index just after the JSON value starting at b[i]
// (structural check only: strings, brackets and literals).
func skipValue(b []byte, i int) (int, error) {
	i = skipWS(b, i)
	if i >= len(b) {
		return i, jsonErr(i, "expected a value")
	}
	switch c := b[i]; {
	case c == '"':
		for j := i + 1; j < len(b); j++ {
			switch b[j] {
			case '\\':
				j++
			case '"':
				return j + 1, nil
			}
		}
		return len(b), jsonErr(i, "unterminated string")
	case c == '{' || c == '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				k, err := skipValue(b, j)
				if err != nil {
					return k, err
				}
				j = k - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
		}
		return len(b), jsonErr(i, "unterminated object or array")
	default:
		j := i
		for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\n' && b[j] != '\r' && b[j] != '\t' {
			j++
		}
		if j == i {
			return j, jsonErr(i, "unexpected character")
		}
		return j, nil
	}
}

// scanObjectRaw splits a JSON object into its fields without copying them.
// Later duplicates win, as with encoding/json.
func scanObjectRaw(b []byte) (map[string][]byte, error) {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, jsonErr(i, "expected an object")
	}
	m := make(map[string][]byte)
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		if skipWS(b, i+1) != len(b) {
			return nil, jsonErr(i+1, "data after the object")
		}
		return m, nil
	}
	for {
		key, j, err := scanString(b, skipWS(b, i))
		if err != nil {
			return nil, err
		}
		j = skipWS(b, j)
		if j >= len(b) || b[j] != ':' {
			return nil, jsonErr(j, "expected ':'")
		}
		start := skipWS(b, j+1)
		end, err := skipValue(b, start)
		if err != nil {
			return nil, err
		}
		m[key] = b[start:end]
		k := skipWS(b, end)
		if k >= len(b) {
			return nil, jsonErr(k, "unterminated object")
		}
		if b[k] == '}' {
			if skipWS(b, k+1) != len(b) {
				return nil, jsonErr(k+1, "data after the object")
			}
			return m, nil
		}
		if b[k] != ',' {
			return nil, jsonErr(k, "expected ',' or '}'")
		}
		i = k + 1
	}
}
