package chat

import (
	"fmt"
	"strings"
	"time"
)

var (
	weekdayNames = [...]string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}
	monthNames   = [...]string{"January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"}
)

// strftime formats t as Python's datetime.now().strftime(format) does on
// Linux in the C locale, which is what transformers' strftime_now global
// returns: datetime.now() is a naive local time, so %Z and %z print
// nothing. glibc's flags are understood: "-" drops padding, "_" pads with
// spaces, "0" with zeros, "^" upper-cases. A directive glibc does not know is
// copied through unchanged, as glibc does.
func strftime(t time.Time, format string) string {
	var sb strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' {
			sb.WriteByte(c)
			continue
		}
		start := i
		i++
		pad := byte(0) // 0: the directive's default
		upper := false
		for i < len(format) && strings.IndexByte("-_0^#", format[i]) >= 0 {
			switch format[i] {
			case '-':
				pad = '-'
			case '_':
				pad = ' '
			case '0':
				pad = '0'
			case '^', '#':
				upper = true
			}
			i++
		}
		if i >= len(format) {
			sb.WriteString(format[start:])
			break
		}
		s, ok := strftimeDirective(t, format[i], pad)
		if !ok {
			sb.WriteString(format[start : i+1])
			continue
		}
		if upper {
			s = strings.ToUpper(s)
		}
		sb.WriteString(s)
	}
	return sb.String()
}

// num formats n to width with the directive's default padding def, unless
// the flag pad overrides it.
func num(n, width int, def, pad byte) string {
	if pad == 0 {
		pad = def
	}
	switch pad {
	case '-':
		return fmt.Sprint(n)
	case ' ':
		return fmt.Sprintf("%*d", width, n)
	}
	return fmt.Sprintf("%0*d", width, n)
}

func strftimeDirective(t time.Time, c byte, pad byte) (string, bool) {
	hour12 := t.Hour() % 12
	if hour12 == 0 {
		hour12 = 12
	}
	switch c {
	case 'a':
		return weekdayNames[t.Weekday()][:3], true
	case 'A':
		return weekdayNames[t.Weekday()], true
	case 'b', 'h':
		return monthNames[t.Month()-1][:3], true
	case 'B':
		return monthNames[t.Month()-1], true
	case 'c':
		return strftime(t, "%a %b %e %H:%M:%S %Y"), true
	case 'C':
		return num(t.Year()/100, 2, '0', pad), true
	case 'd':
		return num(t.Day(), 2, '0', pad), true
	case 'D', 'x':
		return strftime(t, "%m/%d/%y"), true
	case 'e':
		return num(t.Day(), 2, ' ', pad), true
	case 'F':
		return strftime(t, "%Y-%m-%d"), true
	case 'f':
		return num(t.Nanosecond()/1000, 6, '0', pad), true
	case 'G':
		y, _ := t.ISOWeek()
		return num(y, 4, '0', pad), true
	case 'g':
		y, _ := t.ISOWeek()
		return num(y%100, 2, '0', pad), true
	case 'H':
		return num(t.Hour(), 2, '0', pad), true
	case 'I':
		return num(hour12, 2, '0', pad), true
	case 'j':
		return num(t.YearDay(), 3, '0', pad), true
	case 'k':
		return num(t.Hour(), 2, ' ', pad), true
	case 'l':
		return num(hour12, 2, ' ', pad), true
	case 'm':
		return num(int(t.Month()), 2, '0', pad), true
	case 'M':
		return num(t.Minute(), 2, '0', pad), true
	case 'n':
		return "\n", true
	case 'p':
		if t.Hour() < 12 {
			return "AM", true
		}
		return "PM", true
	case 'P':
		if t.Hour() < 12 {
			return "am", true
		}
		return "pm", true
	case 'r':
		return strftime(t, "%I:%M:%S %p"), true
	case 'R':
		return strftime(t, "%H:%M"), true
	case 's':
		return fmt.Sprint(t.Unix()), true
	case 'S':
		return num(t.Second(), 2, '0', pad), true
	case 't':
		return "\t", true
	case 'T', 'X':
		return strftime(t, "%H:%M:%S"), true
	case 'u':
		wd := int(t.Weekday())
		if wd == 0 {
			wd = 7
		}
		return fmt.Sprint(wd), true
	case 'U':
		return num((t.YearDay()+6-int(t.Weekday()))/7, 2, '0', pad), true
	case 'V':
		_, w := t.ISOWeek()
		return num(w, 2, '0', pad), true
	case 'w':
		return fmt.Sprint(int(t.Weekday())), true
	case 'W':
		return num((t.YearDay()+6-(int(t.Weekday())+6)%7)/7, 2, '0', pad), true
	case 'y':
		return num(t.Year()%100, 2, '0', pad), true
	case 'Y':
		return fmt.Sprint(t.Year()), true
	case 'z', 'Z':
		// datetime.now() is naive: no offset, no zone name.
		return "", true
	case '%':
		return "%", true
	}
	return "", false
}
