package quota

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestWindows: counters are named by key identity, limit and the window's start; what is
// left of a window is a Retry-After in whole seconds, rounded up, at least 1.
func TestWindows(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 10, 20, 37, 200_000_000, time.UTC) // 10:20:37.2 UTC
	key, left := rpmWindow.at("ci", now)
	assert.Equal(t, "lim:{ci}:rpm:"+itoa(time.Date(2026, 3, 1, 10, 20, 0, 0, time.UTC).Unix()), key)
	assert.Equal(t, 22800*time.Millisecond, left)
	assert.Equal(t, 23*time.Second, waitFor(left))
	key, left = tpdWindow.at("ci", now.In(time.FixedZone("UTC+5", 5*3600))) // the zone does not move the day
	assert.Equal(t, "lim:{ci}:tpd:"+itoa(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).Unix()), key)
	assert.Equal(t, time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC).Sub(now), left)
	_, left = tpmWindow.at("ci", time.Date(2026, 3, 1, 10, 20, 59, 999_000_000, time.UTC))
	assert.Equal(t, time.Second, waitFor(left), "a millisecond left is a second")
	_, left = tpmWindow.at("ci", time.Date(2026, 3, 1, 10, 21, 0, 0, time.UTC))
	assert.Equal(t, time.Minute, waitFor(left), "at the edge, a whole new window")
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
