package toolcheck

import (
	"testing"
)

// FuzzCheck: no schema or arguments panic the compiler or the check, and a check says at
// most MaxViolations things, each of the "<pointer>: <rule>" form.
func FuzzCheck(f *testing.F) {
	for _, seed := range [][2]string{
		{savePolicy, `{"replicas":"3"}`},
		{deploy2020, `{"name":"web-frontend","containers":[{"image":"X","ports":[0,0]}],"strategy":3}`},
		{deploy07, `{"name":"a","notify":"x","tags":["a","b",3]}`},
		{`{"type":"object","properties":{"p":{"$ref":"#/$defs/p"}},"$defs":{"p":{"$ref":"#/$defs/p"}}}`, `{"p":1}`},
		{`{"type":"object","patternProperties":{"^x":{"type":"integer"}},"unevaluatedProperties":false}`, `{"xa":"1","y":2}`},
		{`{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"n":{"type":"number","maximum":3,"exclusiveMaximum":true}}}`, `{"n":3}`},
		{`{"type":"object","if":{"required":["a"]},"then":{"required":["b"]},"else":{"maxProperties":0}}`, `{"a":1}`},
	} {
		f.Add(seed[0], seed[1])
	}
	c := NewCache(64, 1<<20, Limits{})
	f.Fuzz(func(t *testing.T, schema, args string) {
		s, err, _ := c.Schema([]byte(schema), nil)
		if err != nil {
			return
		}
		got, _ := s.Check(args, nil)
		if len(got) > MaxViolations {
			t.Fatalf("%d violations", len(got))
		}
		for _, v := range got {
			if len(v) < 3 || v[0] != '/' {
				t.Fatalf("violation %q is not <pointer>: <rule>", v)
			}
		}
	})
}
