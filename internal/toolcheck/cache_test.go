package toolcheck

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// variant is schema with a "$comment" first, so each i gives another schema of the same
// shape.
func variant(schema string, i int) []byte {
	return []byte(`{"$comment":"` + strconv.Itoa(i) + `",` + schema[1:])
}

// liveHeap is the heap in use once the garbage is collected.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestCacheEstimate: for the largest schema of each shape within the limits, and for the
// largest real one, what the cache counts for an entry is no less than what the entry
// keeps on the heap. Not parallel: it reads the whole heap.
func TestCacheEstimate(t *testing.T) {
	deployment, err := os.ReadFile("testdata/deployment.json")
	require.NoError(t, err)
	shapes := append(largest(), struct{ name, schema string }{"deployment", string(deployment)})
	for _, shape := range shapes {
		c := NewCache(0, 1<<30, Limits{})
		source := variant(shape.schema, 0)
		before := liveHeap()
		_, err, _ := c.Schema(source, nil)
		require.NoError(t, err, shape.name)
		kept := liveHeap() - before
		estimate := c.Retained()
		t.Logf("%s: %d bytes of source, %d kept, %d estimated", shape.name, len(source), kept, estimate)
		assert.GreaterOrEqual(t, uint64(estimate), kept, shape.name)
		assert.Less(t, estimate, DefaultMaxBytes/2, "%s: the cache holds at least two of any shape", shape.name)
		runtime.KeepAlive(c)
	}
}

// TestCacheHoldsItsBound: twenty distinct schemas, each keeping about 2 MiB compiled and
// 50 KB of source, keep the heap within the cache's 32 MiB bound (plus a little for the
// test's own garbage), where a bound on source bytes would have kept all of them, over 40
// MiB. Not parallel: it reads the whole heap.
func TestCacheHoldsItsBound(t *testing.T) {
	var b strings.Builder // an enum of 150 lists of 40 small objects: 6,000 decoded maps
	b.WriteString(`{"type":"object","properties":{"e":{"enum":[`)
	for i := range 150 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("[" + strings.Repeat(`{"a":1},`, 39) + `{"a":1}]`)
	}
	b.WriteString(`]}}}`)
	shape := b.String()

	c := NewCache(0, 0, Limits{})
	before := liveHeap()
	for i := range 20 {
		_, err, _ := c.Schema(variant(shape, i), nil)
		require.NoError(t, err)
	}
	grown := liveHeap() - before
	t.Logf("%d schemas kept, %d bytes estimated, heap grew %d bytes", c.Len(), c.Retained(), grown)
	assert.Less(t, c.Len(), 20, "some were let go")
	assert.LessOrEqual(t, c.Retained(), DefaultMaxBytes)
	assert.Less(t, grown, uint64(DefaultMaxBytes+4<<20))
	runtime.KeepAlive(c)
}

// TestCacheRefusesWhatIsOverItsLimits: the cache measures what it compiles, so a schema
// over its limits is never compiled, even for a caller that did not measure it.
func TestCacheRefusesWhatIsOverItsLimits(t *testing.T) {
	t.Parallel()
	c := NewCache(0, 0, Limits{})
	s, err, fresh := c.Schema([]byte(anyOfShape(40000)), nil)
	assert.Nil(t, s)
	assert.EqualError(t, err, "the gateway refuses to compile this schema: 40000 members in anyOf at /anyOf, at most 1000 are allowed (schema_limits.max_members)")
	assert.True(t, fresh, "logged once")
	_, _, fresh = c.Schema([]byte(anyOfShape(40000)), nil)
	assert.False(t, fresh)
}

// TestBudget: a request's fresh compiles are charged to its budget; a schema that would
// cost more than is left is not compiled for it, while cached schemas cost nothing. A
// request's first compile goes ahead whatever it costs, so no schema within the limits
// is out of every request's reach.
func TestBudget(t *testing.T) {
	t.Parallel()
	c := NewCache(0, 0, Limits{})
	big, other := []byte(mapShape("properties", 600)), []byte(mapShape("properties", 400))
	cost := func(s []byte) int {
		size, err := Measure(s, Limits{})
		require.NoError(t, err)
		return size.Cost()
	}
	require.Greater(t, cost(big), 500)

	b := NewBudget(Limits{CompileBudget: 500})
	_, err, fresh := c.Schema(big, b)
	require.NoError(t, err, "the first compile of a request goes ahead")
	assert.True(t, fresh)
	s, err, fresh := c.Schema(other, b)
	assert.Nil(t, s)
	assert.ErrorIs(t, err, ErrOverBudget)
	assert.False(t, fresh, "not compiled, not cached")
	_, err, _ = c.Schema(big, b)
	assert.NoError(t, err, "a cached schema is free")
	_, err, _ = c.Schema([]byte(savePolicy), b)
	assert.ErrorIs(t, err, ErrOverBudget, "the budget is spent")

	b = NewBudget(Limits{CompileBudget: cost(other) + cost([]byte(savePolicy))})
	for _, s := range [][]byte{other, []byte(savePolicy)} {
		_, err, fresh = c.Schema(s, b)
		assert.NoError(t, err)
		assert.True(t, fresh)
	}
	assert.Equal(t, 3, c.Len())
}

// BenchmarkCompileLargest compiles the largest schema of each shape within DefaultLimits,
// and the largest real one: what one fresh schema costs a request at most.
func BenchmarkCompileLargest(b *testing.B) {
	deployment, err := os.ReadFile("testdata/deployment.json")
	require.NoError(b, err)
	for _, shape := range append(largest(), struct{ name, schema string }{"deployment", string(deployment)}) {
		b.Run(shape.name, func(b *testing.B) {
			size, err := Measure([]byte(shape.schema), Limits{})
			require.NoError(b, err)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				_, err := compile(variant(shape.schema, i))
				require.NoError(b, err)
			}
			b.ReportMetric(float64(size.Cost()), "cost")
			b.ReportMetric(float64(size.PointerBytes), "pointer-bytes")
		})
	}
}

// BenchmarkCheckLargest checks arguments against the largest cached schema of each shape
// within DefaultLimits: the check costs what the schema's size and the arguments suggest,
// the validator's cost for each schema in a $ref chain bounded by max_ref_depth.
func BenchmarkCheckLargest(b *testing.B) {
	props := func(n int, value string) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprintf(`"p%d":%s`, i, value)
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	args := map[string]string{
		"anyOf": `{"a":1}`, "properties": props(998, `"x"`), "patternProperties": props(100, `"x"`),
		"$ref chain": `{}`, "doubling $refs": `{}`, "enum": `{"e":"nope"}`, "nested values": `{"e":[1]}`,
		"patterns": props(100, `"x"`), "deep": `{"next":{"next":{"next":{"p3_1":"x"}}}}`,
	}
	c := NewCache(0, 0, Limits{})
	for _, shape := range append(largest(), struct{ name, schema string }{"$ref chain of 3", refChain(1)}) {
		a, ok := args[shape.name]
		if !ok {
			a = `{}`
		}
		b.Run(shape.name, func(b *testing.B) {
			s := mustSchema(b, c, shape.schema)
			b.ReportAllocs()
			for b.Loop() {
				_, _ = s.Check(a, nil)
			}
		})
	}
}

// TestAdmit: the schemas a request carries are measured once: those within the limits are
// remembered (a bounded set of hashes), those over them are refused every time.
func TestAdmit(t *testing.T) {
	t.Parallel()
	c := NewCache(0, 0, Limits{})
	for range 2 {
		assert.NoError(t, c.Admit([]byte(savePolicy)))
		assert.EqualError(t, c.Admit([]byte(anyOfShape(1001))), "1001 members in anyOf at /anyOf, at most 1000 are allowed (schema_limits.max_members)")
	}
	assert.Len(t, c.admitted, 1)
	for i := range maxAdmitted + 1 {
		require.NoError(t, c.Admit(variant(`{"type":"object"}`, i)))
	}
	assert.LessOrEqual(t, len(c.admitted), maxAdmitted, "bounded: forgotten when full")
}

// BenchmarkAdmit is what measuring a request's tools costs: the first time, and every time
// after, when the cache remembers them.
func BenchmarkAdmit(b *testing.B) {
	for _, s := range []struct{ name, schema string }{{"savePolicy", savePolicy}, {"deploy2020", deploy2020}} {
		source := []byte(s.schema)
		b.Run(s.name+"/first", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = Measure(source, Limits{})
			}
		})
		b.Run(s.name+"/again", func(b *testing.B) {
			c := NewCache(0, 0, Limits{})
			b.ReportAllocs()
			for b.Loop() {
				_ = c.Admit(source)
			}
		})
	}
}

// TestConcurrentMissesCompileOnce: requests that need the same new schema at once compile
// it once; the others wait for that compile and share its result, and only the one that
// compiled it reports it fresh (so a failure is logged once).
func TestConcurrentMissesCompileOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := NewCache(0, 0, Limits{})
		var compiles atomic.Int32
		release := make(chan struct{})
		c.compile = func(source []byte) (*jsonschema.Schema, error) {
			compiles.Add(1)
			<-release
			return compile(source)
		}
		const n = 8
		type result struct {
			s     *Schema
			fresh bool
		}
		results := make(chan result, n)
		for range n {
			go func() {
				s, err, fresh := c.Schema([]byte(savePolicy), NewBudget(Limits{}))
				assert.NoError(t, err)
				results <- result{s, fresh}
			}()
		}
		synctest.Wait() // every request is in the cache: compiling, or waiting for it
		assert.EqualValues(t, 1, compiles.Load())
		close(release)
		var schemas []*Schema
		fresh := 0
		for range n {
			r := <-results
			schemas = append(schemas, r.s)
			if r.fresh {
				fresh++
			}
		}
		for _, s := range schemas {
			assert.Same(t, schemas[0], s)
		}
		assert.Equal(t, 1, fresh)
		assert.Equal(t, 1, c.Len())
	})
}
