package httpx

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestSetIgnored: the header is one valid line and one comma-separated list, whatever the
// client named its fields, and it is bounded.
func TestSetIgnored(t *testing.T) {
	t.Parallel()
	h := http.Header{}
	SetIgnored(h, nil)
	assert.NotContains(t, h, HeaderIgnored, "absent when nothing was ignored")

	SetIgnored(h, []string{"seed", "a\x01b", "c,d", "e\r\nX-Evil: 1", "caf\u00e9", "top_p"})
	assert.Equal(t, "seed,a_b,c_d,e__X-Evil: 1,caf__,top_p", h.Get(HeaderIgnored))

	many := make([]string, 100)
	for i := range many {
		many[i] = fmt.Sprint("k", i)
	}
	SetIgnored(h, many)
	assert.Len(t, strings.Split(h.Get(HeaderIgnored), ","), MaxIgnored)
}

// TestReadBodyGrowsOnce: a body of known length is read into a buffer sized for it once;
// the read that finds its end does not grow it again (which copies it whole).
func TestReadBodyGrowsOnce(t *testing.T) {
	t.Parallel()
	for _, n := range []int{100, 5_000, 20_000, 60_000} {
		body := bytes.Repeat([]byte("x"), n)
		r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		got, err := ReadBody(httptest.NewRecorder(), r, 1<<20, make([]byte, 0, 4<<10))
		assert.NoError(t, err)
		assert.Equal(t, body, got)
		assert.LessOrEqual(t, cap(got), max(2*n, 4<<10), "%d bytes: the buffer grew twice", n)
	}
}
