package loader

import (
	"fmt"
	"regexp"
	"strconv"
	"unicode/utf8"

	"github.com/beam-agents/toolreg"
)

// maxQuote bounds the bytes of a manifest's value that a message quotes: a
// message names the value, it does not reprint it. A 500 KB tool name, or a
// file that is not a manifest at all, is shown by its start and its length.
const maxQuote = 64

// maxMessage bounds a whole message.
const maxMessage = 1024

// cut returns the first maxQuote bytes of s, on a rune boundary, and whether
// it cut anything.
func cut(s string) (string, bool) { return cutAt(s, maxQuote) }

func cutAt(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], true
}

// quoteShort quotes s as %q does, cutting a long s to its start and its size.
func quoteShort(s string) string {
	c, cutIt := cut(s)
	if !cutIt {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(c), len(s))
}

// quotedRE matches a Go- or CUE-quoted string in a message.
var quotedRE = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// shorten cuts the long values out of a problem: its tool name, and each
// quoted string of its message (CUE quotes the values it refuses).
func shorten(p toolreg.Problem) toolreg.Problem {
	p.Tool = shortName(p.Tool)
	if len(p.Message) > 2*maxQuote {
		p.Message = quotedRE.ReplaceAllStringFunc(p.Message, func(q string) string {
			if len(q) <= maxQuote+2 {
				return q
			}
			if s, err := strconv.Unquote(q); err == nil {
				return quoteShort(s)
			}
			c, _ := cut(q[1:])
			return fmt.Sprintf("%q... (%d bytes)", c, len(q)-2)
		})
		if c, cutIt := cutAt(p.Message, maxMessage); cutIt {
			p.Message = c + fmt.Sprintf("... (message cut from %d bytes)", len(p.Message))
		}
	}
	return p
}

// shortName cuts a long tool name for a message.
func shortName(name string) string { return short(name) }

// short cuts a long s for a message, unquoted.
func short(s string) string {
	if c, cutIt := cut(s); cutIt {
		return fmt.Sprintf("%s... (%d bytes)", c, len(s))
	}
	return s
}

// code shows a piece of syntax (a pattern) for a message: between backquotes
// when it can be, so that its backslashes read as written; cut when long.
func code(s string) string {
	c, cutIt := cut(s)
	if !strconv.CanBackquote(c) {
		return quoteShort(s)
	}
	if cutIt {
		return fmt.Sprintf("`%s`... (%d bytes)", c, len(s))
	}
	return "`" + c + "`"
}
