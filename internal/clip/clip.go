// Package clip bounds text a client controls before it is quoted in an error, written to
// a log or forwarded: a request may carry megabytes where a model id or a label value is
// expected, and none of that may be echoed back or logged whole.
package clip

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

const (
	// QuoteMax is how many bytes of a client's value an error message quotes.
	QuoteMax = 64
	// LogMax is how many bytes of a client-controlled value a log field holds.
	LogMax = 256
	// MessageMax is how many bytes of message an error answer carries at most. Escaped as
	// JSON (at most two bytes for one once Message has cleaned it), an error body stays
	// far under 4 KiB.
	MessageMax = 1024
)

// String returns s cut to at most n bytes on a rune boundary, followed by "…" when it was
// cut.
func String(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// Quote is s quoted as %q quotes it, cut to QuoteMax bytes of s; a longer s says how long
// it was: "9999…" (5000000 bytes).
func Quote(s string) string {
	if len(s) <= QuoteMax {
		return strconv.Quote(s)
	}
	return strconv.Quote(String(s, QuoteMax)) + " (" + strconv.Itoa(len(s)) + " bytes)"
}

// Message bounds an error message a client reads: control characters become spaces,
// invalid UTF-8 becomes "?", and it is cut to MessageMax bytes. Messages normally pass
// unchanged; this is the last guard for texts that quote input (Bedrock's among them).
func Message(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			clean = false
			break
		}
	}
	if !clean || !utf8.ValidString(s) {
		s = strings.Map(func(r rune) rune {
			switch {
			case r < 0x20 || r == 0x7f:
				return ' '
			case r == utf8.RuneError:
				return '?'
			}
			return r
		}, s)
	}
	return String(s, MessageMax)
}
