package argcheck

import (
	"encoding/json"
	"math/big"
	"strconv"
	"strings"
)

// coerce converts the scalar v to typ under Pydantic v2 lax rules. A value it
// cannot convert comes back unchanged, so the validator reports it against
// the schema. In strict mode only the representation of an integer changes
// (10.0 becomes 10: JSON Schema calls both integers, and Go's decoder wants
// the second).
func coerce(typ string, v any, strict bool) any {
	switch typ {
	case "integer":
		switch x := v.(type) {
		case json.Number:
			if s, ok := integralText(string(x)); ok {
				return json.Number(s)
			}
		case string:
			if s, ok := intString(x); ok && !strict {
				return json.Number(s)
			}
		case bool:
			if !strict {
				return boolNumber(x)
			}
		}
	case "number":
		switch x := v.(type) {
		case string:
			if s, ok := floatString(x); ok && !strict {
				return json.Number(s)
			}
		case bool:
			if !strict {
				return boolNumber(x)
			}
		}
	case "boolean":
		if strict {
			return v
		}
		switch x := v.(type) {
		case json.Number:
			if r, ok := new(big.Rat).SetString(string(x)); ok {
				switch {
				case r.Sign() == 0:
					return false
				case r.Cmp(big.NewRat(1, 1)) == 0:
					return true
				}
			}
		case string:
			if b, ok := boolString(x); ok {
				return b
			}
		}
	}
	return v
}

func boolNumber(b bool) json.Number {
	if b {
		return "1"
	}
	return "0"
}

// integralText returns a JSON number's text as a plain integer when its value
// is one ("10", "10.0", "1e2" give "10", "10", "100"). Callers have refused
// numbers whose exponent is too large to expand (see hugeNumber).
func integralText(s string) (string, bool) {
	if !strings.ContainsAny(s, ".eE") {
		return s, true
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok || !r.IsInt() {
		return "", false
	}
	return r.Num().String(), true
}

// intString parses a string holding an integer as Pydantic's lax int does:
// surrounding whitespace is ignored, a sign is allowed, and a decimal point
// may follow if only zeros come after it ("10", " +10 ", "10.00").
func intString(s string) (string, bool) {
	s = trimSpace(s)
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	if dot := strings.IndexByte(s, '.'); dot >= 0 {
		if strings.Trim(s[dot+1:], "0") != "" {
			return "", false
		}
		s = s[:dot]
	}
	if s == "" || len(s) > maxNumberLen {
		return "", false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return "", false
		}
	}
	s = strings.TrimLeft(s, "0")
	if s == "" {
		return "0", true
	}
	if neg {
		return "-" + s, true
	}
	return s, true
}

// floatString parses a string holding a decimal number ("1.5", " -2e3 ",
// ".5"); "nan", "inf", hexadecimal and underscores are refused, as is a value
// too large for a float64.
func floatString(s string) (string, bool) {
	s = trimSpace(s)
	if len(s) > maxNumberLen || !decimalSyntax(s) {
		return "", false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return "", false
	}
	return strconv.FormatFloat(f, 'g', -1, 64), true
}

// decimalSyntax reports whether s is [+-]?(d+(.d*)?|.d+)([eE][+-]?d+)?.
func decimalSyntax(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	n := digits()
	if i < len(s) && s[i] == '.' {
		i++
		n += digits()
	}
	if n == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// boolString accepts Pydantic's boolean strings, in any letter case.
func boolString(s string) (value, ok bool) {
	if len(s) > 5 {
		return false, false
	}
	switch strings.ToLower(s) {
	case "1", "on", "t", "true", "y", "yes":
		return true, true
	case "0", "off", "f", "false", "n", "no":
		return false, true
	}
	return false, false
}

func trimSpace(s string) string {
	return strings.Trim(s, " \t\n\r\v\f")
}

// maxNumberLen bounds the text of a number the checker will take apart. A
// longer number is refused: no tool parameter needs one, and exact big-number
// arithmetic on hostile input would cost time.
const maxNumberLen = 400

// hugeNumber reports whether a JSON number's text is too long, or its
// exponent too large, for exact arithmetic to be cheap (1e999999999 would
// expand to a billion digits).
func hugeNumber(s string) bool {
	if len(s) > maxNumberLen {
		return true
	}
	e := strings.IndexAny(s, "eE")
	if e < 0 {
		return false
	}
	exp := strings.TrimLeft(s[e+1:], "+-")
	exp = strings.TrimLeft(exp, "0")
	return len(exp) > 3 // |exponent| up to 999
}
