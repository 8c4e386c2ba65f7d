package toolcheck

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Schemas as clients write them: OpenAI's SDKs and MCP servers send draft 2020-12 without
// "$schema" (zod-to-json-schema and pydantic add $defs), older agents draft-07 with
// "definitions".
const (
	savePolicy = `{"type":"object","properties":{"filename":{"type":"string","minLength":1},"replicas":{"type":"integer","minimum":1,"maximum":10},"env":{"type":"string","enum":["dev","staging","prod"]},"labels":{"type":"object","additionalProperties":{"type":"string"}},"dry_run":{"type":"boolean"}},"required":["filename"],"additionalProperties":false}`

	deploy2020 = `{"type":"object","$defs":{"container":{"type":"object","properties":{"image":{"type":"string","pattern":"^[a-z0-9./-]+:[a-z0-9.]+$"},"ports":{"type":"array","items":{"type":"integer","exclusiveMinimum":0,"maximum":65535},"uniqueItems":true}},"required":["image"]}},"properties":{"name":{"type":"string","maxLength":8},"containers":{"type":"array","items":{"$ref":"#/$defs/container"},"minItems":1},"strategy":{"oneOf":[{"const":"rolling"},{"const":"recreate"}]}},"required":["name","containers"]}`

	deploy07 = `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","definitions":{"resources":{"type":"object","properties":{"cpu":{"type":"string"},"memory":{"type":"string","format":"byte-size"}},"required":["cpu","memory"]}},"properties":{"name":{"type":"string","format":"hostname"},"resources":{"$ref":"#/definitions/resources"},"notify":{"type":"string","format":"email"},"tags":{"type":"array","items":[{"type":"string"},{"type":"integer"}],"additionalItems":false}},"required":["name"],"dependencies":{"notify":["name","resources"]}}`
)

// check is s.Check of arguments that are not too costly to check.
func check(t testing.TB, s *Schema, arguments string) []string {
	t.Helper()
	violations, err := s.Check(arguments, nil)
	require.NoError(t, err)
	return violations
}

func mustSchema(t testing.TB, c *Cache, source string) *Schema {
	t.Helper()
	s, err, _ := c.Schema([]byte(source), nil)
	require.NoError(t, err)
	return s
}

func TestCheck(t *testing.T) {
	t.Parallel()
	c := NewCache(0, 0, Limits{})
	for _, tt := range []struct {
		name, schema, args string
		want               []string
	}{
		{"valid", savePolicy, `{"filename":"p.yaml","replicas":3,"env":"prod","labels":{"team":"a"}}`, nil},
		{"the contract's example", savePolicy, `{"replicas":"3"}`, []string{
			`/: missing required property "filename"`,
			`/replicas: expected integer, got string`,
		}},
		{"enum and bounds", savePolicy, `{"filename":"","replicas":11,"env":"qa","dry_run":"yes"}`, []string{
			`/dry_run: expected boolean, got string`,
			`/env: must be one of "dev", "staging", "prod"`,
			`/filename: must be at least 1 characters long`,
			`/replicas: must be at most 10`,
		}},
		{"a number for an integer", savePolicy, `{"filename":"a","replicas":2.5}`, []string{`/replicas: expected integer, got number`}},
		{"a whole number written as a decimal is an integer", savePolicy, `{"filename":"a","replicas":2.0}`, nil},
		{"additional properties name the key, never the value", savePolicy, `{"filename":"a","secret":"hunter2","labels":{"team":7}}`, []string{
			`/labels/team: expected string, got number`,
			`/secret: property not allowed`,
		}},
		{"null", savePolicy, `{"filename":null}`, []string{`/filename: expected string, got null`}},
		{"$ref to $defs, nested arrays", deploy2020, `{"name":"web-frontend","containers":[{"image":"nginx:1.27","ports":[80,80]},{"ports":[0,70000]}],"strategy":"blue-green"}`, []string{
			`/containers/0/ports: items must be unique; items 0 and 1 are equal`,
			`/containers/1: missing required property "image"`,
			`/containers/1/ports/0: must be greater than 0`,
			`/containers/1/ports/1: must be at most 65535`,
			`/name: must be at most 8 characters long`,
			`/strategy: must match exactly one schema of oneOf, matches none`,
		}},
		{"minItems, pattern", deploy2020, `{"name":"web","containers":[]}`, []string{`/containers: must have at least 1 items`}},
		{"pattern", deploy2020, `{"name":"web","containers":[{"image":"NGINX"}]}`, []string{`/containers/0/image: must match the pattern "^[a-z0-9./-]+:[a-z0-9.]+$"`}},
		{"draft-07: $ref to definitions, format not asserted", deploy07, `{"name":"not a hostname!","notify":"not an email","resources":{"cpu":"1","memory":"lots"}}`, nil},
		{"draft-07: dependencies, tuple items", deploy07, `{"name":"a","notify":"x@y","tags":["a","b",3]}`, []string{
			`/: missing property "resources", required with "notify"`,
			`/tags: must have 1 fewer items (additionalItems)`,
			`/tags/1: expected integer, got string`,
		}},
		{"draft-07: $ref to definitions", deploy07, `{"name":"a","resources":{"cpu":1}}`, []string{
			`/resources: missing required property "memory"`,
			`/resources/cpu: expected string, got number`,
		}},
		{"no parameters: any object", ``, `{"x":1}`, nil},
		{"arguments that are not an object", savePolicy, `["filename"]`, []string{`/: expected object, got array`}},
		{"arguments that are not JSON", savePolicy, `{"filename":`, []string{`/: the arguments are not valid JSON`}},
		{"no parameters, not an object", ``, `"x"`, []string{`/: expected object, got string`}},
		{"keys that need escaping in a pointer", `{"type":"object","properties":{"a/b":{"type":"object","properties":{"c~d":{"type":"integer"}}}}}`,
			`{"a/b":{"c~d":"x"}}`, []string{`/a~1b/c~0d: expected integer, got string`}},
		{"anyOf, not, const", `{"type":"object","properties":{"id":{"anyOf":[{"type":"string"},{"type":"integer"}]},"mode":{"not":{"const":"unsafe"}},"v":{"const":2}}}`,
			`{"id":true,"mode":"unsafe","v":3}`, []string{
				`/id: must match at least one schema of anyOf`,
				`/mode: must not match the schema of not`,
				`/v: must be 2`,
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var s *Schema
			if tt.schema != "" {
				s = mustSchema(t, c, tt.schema)
			}
			assert.Equal(t, tt.want, check(t, s, tt.args))
		})
	}
}

// TestCheckCapsAtTen: at most ten violations, the first ten in order.
func TestCheckCapsAtTen(t *testing.T) {
	t.Parallel()
	var props, args, want []string
	for i := range 12 {
		props = append(props, fmt.Sprintf(`"p%02d":{"type":"integer"}`, i))
		args = append(args, fmt.Sprintf(`"p%02d":"x"`, i))
		if i < MaxViolations {
			want = append(want, fmt.Sprintf("/p%02d: expected integer, got string", i))
		}
	}
	s := mustSchema(t, NewCache(0, 0, Limits{}), `{"type":"object","properties":{`+strings.Join(props, ",")+`}}`)
	got := check(t, s, "{"+strings.Join(args, ",")+"}")
	assert.Equal(t, want, got)
}

// TestCheckOrderIsStable: the same call reads the same every time, whatever order the
// library found its failures in (it walks maps).
func TestCheckOrderIsStable(t *testing.T) {
	t.Parallel()
	s := mustSchema(t, NewCache(0, 0, Limits{}), deploy2020)
	args := `{"name":"web-frontend","containers":[{"image":"X","ports":[0,0,70000]},{},{"image":"y"}],"strategy":3,"extra":{}}`
	first := check(t, s, args)
	require.NotEmpty(t, first)
	for range 50 {
		require.Equal(t, first, check(t, s, args))
	}
	assert.Equal(t, "/containers/0/image: must match the pattern \"^[a-z0-9./-]+:[a-z0-9.]+$\"", first[0])
}

func TestUncompilableSchemas(t *testing.T) {
	t.Parallel()
	c := NewCache(0, 0, Limits{})
	for name, schema := range map[string]string{
		"a remote $ref":            `{"type":"object","properties":{"p":{"$ref":"https://example.com/p.json"}}}`,
		"a relative $ref":          `{"type":"object","properties":{"p":{"$ref":"p.json"}}}`,
		"a file $ref":              `{"type":"object","properties":{"p":{"$ref":"file:///etc/passwd"}}}`,
		"an unknown metaschema":    `{"$schema":"https://example.com/my-meta","type":"object"}`,
		"a $ref to no definition":  `{"type":"object","properties":{"p":{"$ref":"#/$defs/missing"}}}`,
		"a type that is no type":   `{"type":"object","properties":{"p":{"type":"thing"}}}`,
		"a regex Go cannot read":   `{"type":"object","properties":{"p":{"type":"string","pattern":"(?<=a)b"}}}`,
		"a schema that is not one": `{"type":"object","properties":{"p":5}}`,
	} {
		s, err, fresh := c.Schema([]byte(schema), nil)
		assert.Error(t, err, name)
		assert.Nil(t, s, name)
		assert.True(t, fresh, name)
		_, err, fresh = c.Schema([]byte(schema), nil)
		assert.Error(t, err, name)
		assert.False(t, fresh, "%s: the failure is cached, so it is logged once", name)
	}
}

func TestCacheBounds(t *testing.T) {
	t.Parallel()
	c := NewCache(3, 1<<20, Limits{})
	schema := func(i int) []byte {
		return fmt.Appendf(nil, `{"type":"object","properties":{"p%d":{"type":"string"}}}`, i)
	}
	for i := range 5 {
		_, err, fresh := c.Schema(schema(i), nil)
		require.NoError(t, err)
		assert.True(t, fresh)
	}
	assert.Equal(t, 3, c.Len())
	_, _, fresh := c.Schema(schema(4), nil)
	assert.False(t, fresh, "recent: kept")
	_, _, fresh = c.Schema(schema(0), nil)
	assert.True(t, fresh, "least recently used: evicted")

	small := NewCache(10, 10<<10, Limits{}) // one small schema keeps about 7 KiB by estimate
	_, _, _ = small.Schema(schema(1), nil)
	_, _, _ = small.Schema(schema(2), nil)
	assert.Equal(t, 1, small.Len(), "bounded by memory")
	big := []byte(`{"type":"object","description":"` + strings.Repeat("x", 20<<10) + `"}`)
	s, err, _ := small.Schema(big, nil)
	require.NoError(t, err)
	assert.Nil(t, check(t, s, `{}`), "a schema larger than the cache is compiled, not kept")
	assert.Equal(t, 1, small.Len())
}

func TestCacheIsShared(t *testing.T) {
	t.Parallel()
	c := NewCache(0, 0, Limits{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				s, err, _ := c.Schema([]byte(savePolicy), nil)
				assert.NoError(t, err)
				assert.Len(t, check(t, s, `{}`), 1)
			}
		})
	}
	wg.Wait()
	assert.Equal(t, 1, c.Len())
	var nilCache *Cache
	_, err, _ := nilCache.Schema([]byte(savePolicy), nil)
	assert.ErrorIs(t, err, ErrNoCache)
}

func TestUnknownTool(t *testing.T) {
	t.Parallel()
	assert.Equal(t, []string{`/: there is no tool named "save_polcy" in tools`}, UnknownTool("save_polcy"))
}

// BenchmarkCheck is the cost of checking one call in report mode, its schema cached: the
// hash and lookup of the schema, decoding the arguments and validating them.
func BenchmarkCheck(b *testing.B) {
	c := NewCache(0, 0, Limits{})
	for _, bm := range []struct{ name, schema, args string }{
		{"valid", savePolicy, `{"filename":"p.yaml","replicas":3,"env":"prod","labels":{"team":"a","tier":"web"}}`},
		{"invalid", savePolicy, `{"replicas":"3","env":"qa"}`},
		{"nested", deploy2020, `{"name":"web","containers":[{"image":"nginx:1.27","ports":[80,443]},{"image":"envoy:1.30","ports":[9901]}],"strategy":{"const":"rolling"}}`},
	} {
		b.Run(bm.name, func(b *testing.B) {
			source := []byte(bm.schema)
			b.ReportAllocs()
			for b.Loop() {
				s, _, _ := c.Schema(source, nil)
				_, _ = s.Check(bm.args, nil)
			}
		})
	}
}

// TestFormatRegexIsNotAsserted: draft-07's format "regex", which the library asserts by
// compiling every string there as a regular expression (a 5 KB string took it 0.2 to
// 0.5 s), validates nothing, as every other format: a string that is no regular
// expression passes, and so fails a not of it, as it does a not of "email".
func TestFormatRegexIsNotAsserted(t *testing.T) {
	t.Parallel()
	s := mustSchema(t, NewCache(0, 0, Limits{}), `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{`+
		`"r":{"format":"regex"},"notR":{"not":{"format":"regex"}},"notE":{"not":{"format":"email"}}}}`)
	assert.Empty(t, check(t, s, `{"r":"("}`))
	assert.Equal(t, []string{"/notE: must not match the schema of not", "/notR: must not match the schema of not"},
		check(t, s, `{"r":"(","notR":"(","notE":"x"}`))
	assert.Empty(t, check(t, s, `{"r":"`+strings.Repeat(`\\pL{1000}`, 500)+`"}`))
}
