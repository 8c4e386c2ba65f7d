package toolcheck

import (
	"fmt"
	"strings"
)

// The schema library reads every number it compares as a math/big.Rat, from its text, each
// time: 1e999999 takes it 20 to 30 ms and 415 KB, for a number of 9 bytes, in a schema
// (minimum, enum…) and in the arguments alike. No schema or tool call needs such numbers:
// float64 spans exponents -324 to 308 and 17 significant digits, int64 19 digits, decimal128
// 34 digits. So a schema with a number beyond these bounds is refused (Measure), and
// arguments with one are not checked (ErrTooCostly). Within them a number costs the
// library at most about 6 µs to read, and 10 µs to divide (multipleOf) (BenchmarkNumbers).
const (
	// maxNumberDigits bounds the digits of a number's mantissa, before its exponent.
	maxNumberDigits = 100
	// maxNumberExponent bounds the magnitude of a number's written exponent.
	maxNumberExponent = 400
)

// numberSize returns the digits of a JSON number's mantissa and the magnitude of its
// exponent, the latter capped just above maxNumberExponent so that no exponent's text
// overflows it.
func numberSize(text string) (digits, exponent int) {
	mantissa, exp, _ := strings.Cut(strings.ToLower(text), "e")
	for _, c := range mantissa {
		if c >= '0' && c <= '9' {
			digits++
		}
	}
	exp = strings.TrimLeft(strings.TrimLeft(exp, "+-"), "0")
	if len(exp) > 4 {
		return digits, maxNumberExponent + 1
	}
	for _, c := range exp {
		exponent = exponent*10 + int(c-'0')
	}
	return digits, min(exponent, maxNumberExponent+1)
}

// numberBounds words the bounds for messages.
var numberBounds = fmt.Sprintf("at most %d digits, an exponent within ±%d", maxNumberDigits, maxNumberExponent)

// numberOverBounds reports whether a JSON number's text is beyond the bounds.
func numberOverBounds(text string) bool {
	digits, exponent := numberSize(text)
	return digits > maxNumberDigits || exponent > maxNumberExponent
}
