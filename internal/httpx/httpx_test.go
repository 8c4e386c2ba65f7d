package httpx

import (
	"fmt"
	"net/http"
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
