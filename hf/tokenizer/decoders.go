package tokenizer

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// decoder turns token strings back into text, possibly in several steps.
type decoder interface {
	decodeChain(tokens []string) ([]string, error)
}

type seqDecoder []decoder

func (s seqDecoder) decodeChain(tokens []string) ([]string, error) {
	var err error
	for _, d := range s {
		if tokens, err = d.decodeChain(tokens); err != nil {
			return nil, err
		}
	}
	return tokens, nil
}

type byteLevelDecoder struct{}

func (byteLevelDecoder) decodeChain(tokens []string) ([]string, error) {
	var buf []byte
	for _, t := range tokens {
		mark := len(buf)
		ok := true
		for _, r := range t {
			b, in := runeToByte[r]
			if !in {
				ok = false
				break
			}
			buf = append(buf, b)
		}
		if !ok {
			buf = append(buf[:mark], t...)
		}
	}
	return []string{lossyUTF8(buf)}, nil
}

// lossyUTF8 is Rust's String::from_utf8_lossy: each maximal invalid
// subsequence becomes one U+FFFD.
func lossyUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) + 8)
	for i := 0; i < len(b); {
		c := b[i]
		if c < 0x80 {
			sb.WriteByte(c)
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || size > 1 {
			sb.Write(b[i : i+size])
			i += size
			continue
		}
		// Invalid: consume the maximal prefix of a valid sequence.
		n := 1
		var need int
		lo, hi := byte(0x80), byte(0xBF)
		switch {
		case c >= 0xC2 && c <= 0xDF:
			need = 1
		case c == 0xE0:
			need, lo = 2, 0xA0
		case c >= 0xE1 && c <= 0xEC, c == 0xEE, c == 0xEF:
			need = 2
		case c == 0xED:
			need, hi = 2, 0x9F
		case c == 0xF0:
			need, lo = 3, 0x90
		case c >= 0xF1 && c <= 0xF3:
			need = 3
		case c == 0xF4:
			need, hi = 3, 0x8F
		}
		for k := 0; k < need && i+n < len(b); k++ {
			x := b[i+n]
			if x < lo || x > hi {
				break
			}
			lo, hi = 0x80, 0xBF
			n++
		}
		sb.WriteString("\uFFFD")
		i += n
	}
	return sb.String()
}

type metaspaceDecoder struct {
	replacement rune
	prepend     bool // prepend_scheme != never
}

func (m metaspaceDecoder) decodeChain(tokens []string) ([]string, error) {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		var sb strings.Builder
		for _, r := range t {
			if r == m.replacement {
				if i == 0 && m.prepend {
					continue
				}
				sb.WriteByte(' ')
			} else {
				sb.WriteRune(r)
			}
		}
		out[i] = sb.String()
	}
	return out, nil
}

type wordPieceDecoder struct {
	prefix  string
	cleanup bool
}

var cleanupReplacer = []struct{ from, to string }{
	{" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"},
	{" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
}

func cleanupText(s string) string {
	for _, r := range cleanupReplacer {
		s = strings.ReplaceAll(s, r.from, r.to)
	}
	return s
}

func (w wordPieceDecoder) decodeChain(tokens []string) ([]string, error) {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		if i != 0 {
			if strings.HasPrefix(t, w.prefix) {
				t = t[len(w.prefix):]
			} else {
				t = " " + t
			}
		}
		if w.cleanup {
			t = cleanupText(t)
		}
		out[i] = t
	}
	return out, nil
}

type byteFallbackDecoder struct{}

func (byteFallbackDecoder) decodeChain(tokens []string) ([]string, error) {
	var out []string
	var pending []byte
	flush := func() {
		if len(pending) == 0 {
			return
		}
		if utf8.Valid(pending) {
			out = append(out, string(pending))
		} else {
			for range pending {
				out = append(out, "\uFFFD")
			}
		}
		pending = pending[:0]
	}
	for _, t := range tokens {
		if len(t) == 6 && strings.HasPrefix(t, "<0x") && t[5] == '>' {
			if v, err := strconv.ParseUint(t[3:5], 16, 8); err == nil {
				pending = append(pending, byte(v))
				continue
			}
		}
		flush()
		out = append(out, t)
	}
	flush()
	return out, nil
}

type fuseDecoder struct{}

func (fuseDecoder) decodeChain(tokens []string) ([]string, error) {
	return []string{strings.Join(tokens, "")}, nil
}

type stripDecoder struct {
	content     rune
	start, stop int
}

func (s stripDecoder) decodeChain(tokens []string) ([]string, error) {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		rs := []rune(t)
		startCut := 0
		for k := 0; k < s.start && k < len(rs); k++ {
			if rs[k] != s.content {
				break
			}
			startCut = k + 1
		}
		stopCut := len(rs)
		for k := 0; k < s.stop && k < len(rs); k++ {
			idx := len(rs) - k - 1
			if rs[idx] != s.content {
				break
			}
			stopCut = idx
		}
		if stopCut < startCut {
			stopCut = startCut
		}
		out[i] = string(rs[startCut:stopCut])
	}
	return out, nil
}

type replaceDecoder struct {
	pat     pattern
	content string
}

func (r *replaceDecoder) decodeChain(tokens []string) ([]string, error) {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		m := r.pat.findAll(t, nil)
		if len(m) == 0 {
			out[i] = t
			continue
		}
		var sb strings.Builder
		last := 0
		for _, x := range m {
			sb.WriteString(t[last:x.start])
			sb.WriteString(r.content)
			last = x.end
		}
		sb.WriteString(t[last:])
		out[i] = sb.String()
	}
	return out, nil
}

type bpeDecoder struct{ suffix string }

func (b bpeDecoder) decodeChain(tokens []string) ([]string, error) {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		rep := " "
		if i == len(tokens)-1 {
			rep = ""
		}
		if b.suffix == "" {
			out[i] = t
		} else {
			out[i] = strings.ReplaceAll(t, b.suffix, rep)
		}
	}
	return out, nil
}

type ctcDecoder struct {
	pad, delimiter string
	cleanup        bool
}

func (c ctcDecoder) decodeChain(tokens []string) ([]string, error) {
	var out []string
	for i, t := range tokens {
		if i > 0 && tokens[i-1] == t {
			continue
		}
		if c.pad != "" {
			t = strings.ReplaceAll(t, c.pad, "")
		}
		if c.cleanup {
			t = cleanupText(t)
			if c.delimiter != "" {
				t = strings.ReplaceAll(t, c.delimiter, " ")
			}
		}
		if t != "" {
			out = append(out, t)
		}
	}
	return out, nil
}
