package pattern

import (
	"fmt"
	"regexp/syntax"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// Error reports a pattern that is not portable, or not valid at all.
type Error struct {
	Pattern string
	// Offset is the byte offset of the construct in Pattern.
	Offset int
	// Construct is the text at fault, such as `\z` or `(?i)`.
	Construct string
	// Why says what the construct does in each engine.
	Why string
	// Portable is how to write it so that every engine reads it alike.
	Portable string
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("pattern: %s at offset %d %s", quoteConstruct(e.Construct), e.Offset, e.Why)
	if e.Portable != "" {
		msg += ": " + e.Portable
	}
	return msg
}

func quoteConstruct(s string) string {
	if len(s) > 16 {
		s = s[:16] + "..."
	}
	return "`" + s + "`"
}

// Check returns nil when p is a valid RE2 pattern that means the same in
// ECMA-262 with the u flag, and an *Error naming the first construct that
// does not otherwise.
//
// A valid pattern is remembered (up to maxValid of them), so that the
// thousands of tools that share one pattern parse it once.
func Check(p string) error {
	if _, ok := valid.Load(p); ok {
		return nil
	}
	err := check(p)
	if err == nil && nvalid.Load() < maxValid {
		if _, loaded := valid.LoadOrStore(p, struct{}{}); !loaded {
			nvalid.Add(1)
		}
	}
	return err
}

// maxValid bounds the patterns Check remembers: a process that checks
// patterns without end (a fuzzer, a service taking manifests from users)
// parses the ones past it every time, as before.
const maxValid = 4096

var (
	valid  sync.Map // pattern string -> struct{}: checked, and valid
	nvalid atomic.Int64
)

func check(p string) error {
	if _, err := syntax.Parse(p, syntax.Perl); err != nil {
		return &Error{Pattern: p, Construct: p, Why: "is not a valid regular expression (" + strings.TrimPrefix(err.Error(), "error parsing regexp: ") + ")",
			Portable: "fix the regular expression"}
	}
	s := &scanner{p: p}
	return s.scan()
}

type scanner struct {
	p   string
	off int
	// quantifiable: the last item can take a quantifier (an atom, not an
	// anchor, a group's start, an alternation or a quantifier).
	quantifiable bool
	// quantified: the last item is a quantifier, which may take one ? (lazy).
	quantified bool
}

func (s *scanner) fail(at int, construct, why, portable string) error {
	return &Error{Pattern: s.p, Offset: at, Construct: construct, Why: why, Portable: portable}
}

func (s *scanner) scan() error {
	for s.off < len(s.p) {
		start := s.off
		c := s.p[s.off]
		switch c {
		case '\\':
			if err := s.escape(false); err != nil {
				return err
			}
			continue
		case '[':
			if err := s.class(); err != nil {
				return err
			}
			s.quantifiable, s.quantified = true, false
			continue
		case '(':
			if err := s.group(); err != nil {
				return err
			}
			s.quantifiable, s.quantified = false, false
			continue
		case ')':
			s.off++
			s.quantifiable, s.quantified = true, false
			continue
		case '|':
			s.off++
			s.quantifiable, s.quantified = false, false
			continue
		case '^', '$':
			s.off++
			s.quantifiable, s.quantified = false, false
			continue
		case '.':
			return s.fail(start, ".", "matches \\r, U+2028 and U+2029 in RE2 but not in ECMA-262", "write [^\\n], which means RE2's . in both")
		case '*', '+', '?':
			if err := s.quantifier(start, 1); err != nil {
				return err
			}
			continue
		case '{':
			if n := repeatLen(s.p[s.off:]); n > 0 {
				if err := s.quantifier(start, n); err != nil {
					return err
				}
				continue
			}
			return s.fail(start, "{", "is a literal in RE2 but an error in ECMA-262", "write \\{ for a literal brace")
		case '}':
			return s.fail(start, "}", "is a literal in RE2 but an error in ECMA-262", "write \\} for a literal brace")
		case ']':
			return s.fail(start, "]", "is a literal in RE2 but an error in ECMA-262", "write \\] for a literal bracket")
		}
		_, n := utf8.DecodeRuneInString(s.p[s.off:])
		s.off += n
		s.quantifiable, s.quantified = true, false
	}
	return nil
}

// quantifier takes a quantifier of n bytes at start.
func (s *scanner) quantifier(start, n int) error {
	q := s.p[start : start+n]
	switch {
	case s.quantified && q == "?":
		s.off += n
		s.quantified = false // lazy; nothing may follow
		return nil
	case !s.quantifiable:
		return s.fail(start, q, "quantifies nothing that ECMA-262 can repeat (an anchor, \\b, or nothing)", "quantify a character, a class or a group")
	}
	s.off += n
	s.quantifiable, s.quantified = false, true
	return nil
}

// repeatLen returns the length of a {n}, {n,} or {n,m} repeat at the start
// of p, or 0.
func repeatLen(p string) int {
	i := 1
	digits := func() int {
		j := i
		for i < len(p) && p[i] >= '0' && p[i] <= '9' {
			i++
		}
		return i - j
	}
	if digits() == 0 {
		return 0
	}
	if i < len(p) && p[i] == ',' {
		i++
		digits()
	}
	if i < len(p) && p[i] == '}' {
		return i + 1
	}
	return 0
}

func (s *scanner) group() error {
	start := s.off
	rest := s.p[s.off:]
	switch {
	case strings.HasPrefix(rest, "(?:"):
		s.off += 3
	case strings.HasPrefix(rest, "(?="), strings.HasPrefix(rest, "(?!"), strings.HasPrefix(rest, "(?<="), strings.HasPrefix(rest, "(?<!"):
		n := 3
		if rest[2] == '<' {
			n = 4
		}
		return s.fail(start, rest[:n], "is a lookaround, which RE2 does not have", "match without it (a pattern cannot look around in Go)")
	case strings.HasPrefix(rest, "(?P<"), strings.HasPrefix(rest, "(?<"):
		end := strings.IndexByte(rest, '>')
		return s.fail(start, rest[:end+1], "names a group, which RE2 and ECMA-262 write and name differently", "write (...) or (?:...): a pattern only matches, so a name adds nothing")
	case strings.HasPrefix(rest, "(?"):
		end := strings.IndexAny(rest[2:], ":)")
		construct := rest
		if end >= 0 {
			construct = rest[:end+3]
		}
		portable := "leave the flags out"
		if strings.Contains(construct, "i") {
			portable = "spell both cases in a class, such as [Aa][Bb]"
		}
		return s.fail(start, construct, "sets flags, which ECMA-262 does not take inside a pattern", portable)
	default:
		s.off++
	}
	return nil
}

// escape takes the escape at s.off; inClass tells where it is.
func (s *scanner) escape(inClass bool) error {
	start := s.off
	if s.off+1 >= len(s.p) {
		return s.fail(start, "\\", "ends the pattern", "write \\\\ for a backslash")
	}
	c, n := utf8.DecodeRuneInString(s.p[s.off+1:])
	construct := s.p[start : s.off+1+n]
	s.off += 1 + n
	s.quantifiable, s.quantified = true, false
	switch c {
	case 'd', 'D', 'w', 'W':
	case 'b', 'B':
		if inClass {
			return s.fail(start, construct, "is backspace in an ECMA-262 class and an error in RE2's", "write \\x08 for a backspace")
		}
		s.quantifiable = false
	case 's':
		return s.fail(start, construct, "is [\\t\\n\\f\\r ] in RE2 but also \\v and Unicode spaces in ECMA-262", "write [\\t\\n\\f\\r ] (or list the spaces you mean)")
	case 'S':
		return s.fail(start, construct, "is [^\\t\\n\\f\\r ] in RE2 but excludes \\v and Unicode spaces too in ECMA-262", "write [^\\t\\n\\f\\r ]")
	case 'n', 'r', 't', 'f', 'v':
	case 'x':
		if len(s.p) >= s.off+2 && isHex(s.p[s.off]) && isHex(s.p[s.off+1]) {
			s.off += 2
			return nil
		}
		end := min(len(s.p), s.off+4)
		return s.fail(start, s.p[start:end], "is not a two-digit \\xhh escape, the only form both engines read alike", "write \\xhh for a code point below 0x100, or the character itself")
	case '^', '$', '\\', '.', '*', '+', '?', '(', ')', '[', ']', '{', '}', '|', '/':
	case '-':
		if !inClass {
			return s.fail(start, construct, "is an error outside a class in ECMA-262", "write - unescaped")
		}
	case 'A':
		return s.fail(start, construct, "is RE2's start of text, an error in ECMA-262", "write ^")
	case 'z':
		return s.fail(start, construct, "is RE2's end of text, an error in ECMA-262", "write $")
	case 'p', 'P':
		if s.off < len(s.p) && s.p[s.off] == '{' {
			if end := strings.IndexByte(s.p[s.off:], '}'); end >= 0 {
				construct = s.p[start : s.off+end+1]
			}
		} else if s.off < len(s.p) {
			_, n := utf8.DecodeRuneInString(s.p[s.off:])
			construct = s.p[start : s.off+n]
		}
		return s.fail(start, construct, "is a Unicode class whose names and forms RE2 and ECMA-262 do not share", "write an explicit class, such as [A-Za-z]")
	default:
		return s.fail(start, construct, "is an escape RE2 and ECMA-262 do not read alike", "write the character itself, or escape only ^ $ \\ . * + ? ( ) [ ] { } | /")
	}
	return nil
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// class takes a bracketed class at s.off.
func (s *scanner) class() error {
	start := s.off
	s.off++
	if s.off < len(s.p) && s.p[s.off] == '^' {
		s.off++
	}
	first := true
	// single: the last item was one character, which may start a range.
	single, rangeNext := false, false
	for s.off < len(s.p) {
		at := s.off
		c := s.p[s.off]
		switch {
		case c == ']' && first:
			return s.fail(at, "]", "first in a class is a literal in RE2 but ends an empty class in ECMA-262", "write \\]")
		case c == ']':
			if rangeNext {
				return s.fail(at-1, "-]", "ends a range with nothing", "write \\- for a literal -")
			}
			s.off++
			return nil
		case c == '[':
			construct := "["
			if strings.HasPrefix(s.p[at:], "[:") {
				if end := strings.Index(s.p[at:], ":]"); end > 0 {
					construct = s.p[at : at+end+2]
				}
				return s.fail(at, construct, "is a POSIX class in RE2 but a literal [ in ECMA-262", "write an explicit class, such as [A-Za-z] for [[:alpha:]]")
			}
			return s.fail(at, construct, "in a class means different things to RE2 and to ECMA-262's newer modes", "write \\[")
		case c == '\\':
			if err := s.escape(true); err != nil {
				return err
			}
			esc := s.p[at+1]
			isSet := esc == 'd' || esc == 'D' || esc == 'w' || esc == 'W'
			if isSet && (rangeNext || s.off < len(s.p)-1 && s.p[s.off] == '-' && s.p[s.off+1] != ']') {
				return s.fail(at, s.p[at:s.off], "is a range endpoint: an error in both engines", "list the class escape and the range apart")
			}
			single, rangeNext = !isSet, false
		case c == '-' && single && s.off+1 < len(s.p) && s.p[s.off+1] != ']':
			s.off++
			single, rangeNext = false, true
		default:
			_, n := utf8.DecodeRuneInString(s.p[s.off:])
			s.off += n
			single, rangeNext = !rangeNext, false
		}
		first = false
	}
	return s.fail(start, "[", "opens a class that never closes", "close it with ]")
}
