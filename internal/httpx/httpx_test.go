package httpx

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/nirmata/llm-gateway/internal/fault"
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

// TestStatus walks the HTTP statuses of docs/PROTOCOL.md 5: every kind has one.
func TestStatus(t *testing.T) {
	t.Parallel()
	for k, want := range map[fault.Kind]int{
		fault.KindInternal: 500, fault.KindInvalid: 400, fault.KindUnauthenticated: 401, fault.KindNotFound: 404,
		fault.KindTooLarge: 413, fault.KindBodyTimeout: 408, fault.KindRateLimited: 429, fault.KindTimeout: 504,
		fault.KindUnavailable: 503, fault.KindUpstream: 502, fault.KindCredentials: 502, fault.KindNoCredentials: 503, fault.KindCanceled: 499,
		fault.KindWrongMethod: 405, fault.KindURITooLong: 414, fault.KindHeadersTooLarge: 431,
	} {
		assert.Equal(t, want, Status(k), "kind %d", k)
	}
	for k := range fault.Kind(fault.Kinds) {
		assert.NotZero(t, Status(k), "kind %d has a status", k)
	}
}

// TestReadBodyErrors: a body over the limit, one that stalls past its deadline and one
// whose read fails are told apart, the last refused as the body, naming no field.
func TestReadBodyErrors(t *testing.T) {
	t.Parallel()
	post := func(body io.Reader, length int64) error {
		r := httptest.NewRequest(http.MethodPost, "/", body)
		r.ContentLength = length
		_, err := ReadBody(httptest.NewRecorder(), r, 8, nil)
		return err
	}
	assert.ErrorIs(t, post(strings.NewReader("123456789"), 9), fault.ErrBodyTooLarge)
	assert.ErrorIs(t, post(strings.NewReader("123456789"), -1), fault.ErrBodyTooLarge)
	assert.ErrorIs(t, post(iotest.ErrReader(os.ErrDeadlineExceeded), -1), fault.ErrBodyTimeout)
	err := post(iotest.ErrReader(errors.New("connection reset by peer")), -1)
	assert.Equal(t, fault.Failure{Kind: fault.KindInvalid, Message: "invalid request body: reading the body failed: connection reset by peer",
		Reason: fault.ReasonInvalidValue}, fault.Classify(t.Context(), err))
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
