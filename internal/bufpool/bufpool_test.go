package bufpool

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestGetIsEmptyAndPutKeepsGrownBuffers(t *testing.T) {
	bp := Get()
	assert.Empty(t, *bp)
	b := append(*bp, "some bytes"...)
	Put(bp, b)
	assert.Empty(t, *bp, "a buffer given back is emptied")
	assert.GreaterOrEqual(t, cap(*bp), len("some bytes"), "and keeps what it grew to")
	for range 100 { // whatever the pool hands out is empty
		bp := Get()
		assert.Empty(t, *bp)
		Put(bp, append(*bp, 'x'))
	}
}

func TestPutDropsLargeBuffers(t *testing.T) {
	bp := Get()
	big := make([]byte, 0, Max+1)
	before := *bp
	Put(bp, big)
	assert.Equal(t, cap(before), cap(*bp), "a buffer past Max is not stored in bp")
}
