// Package pattern decides whether a JSON Schema pattern means the same to
// every engine that checks it: Go's RE2, which toolreg compiles it with, and
// ECMA-262 with the u flag, the dialect JSON Schema names and the one its
// consumers use (JavaScript, ajv in MCP clients, ...).
//
// It accepts the common core of the two: literal characters, escaped syntax
// characters (\. \( \/ ...), \d \D \w \W \b \B, \n \r \t \f \v, \xhh,
// classes of literals, ranges and those escapes, groups (...) and (?:...),
// alternation, the anchors ^ and $, and the quantifiers * + ? {n} {n,}
// {n,m}, greedy or lazy. It refuses the rest, naming the construct and its
// portable spelling: RE2-only syntax that ECMA-262 rejects ((?i), (?P<n>..),
// \A, \z, \pL, [[:alpha:]], \x{41}), and syntax both accept that matches
// differently: . (ECMA-262 does not match \r, U+2028 or U+2029 with it; write
// [^\n]) and \s (ECMA-262 adds \v and Unicode spaces; write [\t\n\f\r ]).
package pattern
