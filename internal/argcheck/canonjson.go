package argcheck

// AppendCanonicalString quotes s as toolreg's canonical JSON does: only the
// quote, backslash and control characters escaped, other text kept as UTF-8,
// invalid UTF-8 as the replacement character U+FFFD. Package toolreg's CanonicalJSON writes strings
// with it, so the fast path here and the reference there cannot drift.
func AppendCanonicalString(b []byte, s string) []byte {
	b, _ = appendQuoted(b, s, false)
	return b
}

// AppendValidCanonicalString is AppendCanonicalString for s that must be
// valid UTF-8: on an invalid byte it reports !ok, in the same single pass.
func AppendValidCanonicalString(b []byte, s string) ([]byte, bool) { return appendQuoted(b, s, true) }

// AppendCanonicalFloat writes the finite f as toolreg's canonical JSON does
// (Python's float repr): the shortest digits that read back the same, in
// fixed notation with at least one decimal ("10.0") when the decimal exponent
// is in [-4, 16), and as "1.5e-05" or "1e+16" otherwise. It writes nothing
// for NaN or an infinity, which JSON cannot hold: callers refuse those first.
func AppendCanonicalFloat(b []byte, f float64) []byte { return appendFloat(b, f) }
