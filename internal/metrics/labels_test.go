package metrics

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLabelSetValue(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 70)
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"empty is none", "", LabelNone},
		{"plain", "kyverno", "kyverno"},
		{"at limit kept", strings.Repeat("b", 8), strings.Repeat("b", 8)},
		{"truncated", long, strings.Repeat("a", 8)},
		// "é" is 2 bytes: 7 bytes of "a" plus "é" is 9, so the cut falls inside "é".
		{"truncated at rune boundary", "aaaaaaaé", "aaaaaaa"},
		{"invalid UTF-8 repaired", "ab\xffc", "ab\uFFFDc"},
		{"literal other", "other", LabelOther},
		{"literal none", "none", LabelNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newLabelSet(4, 8)
			got := s.value(tt.in)
			assert.Equal(t, tt.want, got)
			assert.True(t, utf8.ValidString(got))
			assert.LessOrEqual(t, len(got), 8)
		})
	}
}

func TestLabelSetCap(t *testing.T) {
	t.Parallel()
	s := newLabelSet(3, 8)
	for _, v := range []string{"a", "b", "none", "other", "c"} {
		require.Equal(t, v, s.value(v), "admitted while under the cap")
	}
	assert.Equal(t, LabelOther, s.value("d"), "beyond the cap")
	assert.Equal(t, LabelOther, s.value("d"), "still beyond the cap")
	assert.Equal(t, "b", s.value("b"), "admitted values stay admitted")
	assert.Equal(t, LabelNone, s.value(""), "empty is none even when full")
	// A long value whose truncation was already admitted maps to it, full or not.
	assert.Equal(t, "c", newLabelSetWith(t, 3, 1, "c").value("cc"))
	assert.Equal(t, 3, s.n, "none and other use no slot")
}

func newLabelSetWith(t *testing.T, max, maxLen int, vs ...string) *labelSet {
	t.Helper()
	s := newLabelSet(max, maxLen)
	for _, v := range vs {
		require.Equal(t, v, s.value(v))
	}
	return s
}

// The returned value must not share memory with the caller's string: a series lives for
// the life of the process and would pin whatever buffer the string points into.
func TestLabelSetCopies(t *testing.T) {
	t.Parallel()
	buf := []byte(`{"model":"claude"}`)
	in := string(buf[10:16])
	got := newLabelSet(4, 64).value(in)
	require.Equal(t, "claude", got)
	assert.NotSame(t, unsafe.StringData(in), unsafe.StringData(got))
}

func TestLabelSetConcurrent(t *testing.T) {
	t.Parallel()
	const max = 10
	s := newLabelSet(max, 16)
	var wg sync.WaitGroup
	results := make([][]string, 8)
	for g := range results {
		wg.Go(func() {
			for i := range 100 {
				results[g] = append(results[g], s.value(fmt.Sprintf("v%d", (i*7+g)%40)))
			}
		})
	}
	wg.Wait()
	distinct := map[string]bool{}
	for _, rs := range results {
		for _, r := range rs {
			distinct[r] = true
		}
	}
	assert.True(t, distinct[LabelOther])
	assert.Len(t, distinct, max+1, "max admitted values plus other")
}
