package bedrocksim

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/clocktest"
)

// newClock is a time the test moves; the simulator reads it through Options.Now.
func newClock() *clocktest.Clock { return clocktest.New(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)) }

// Texts long enough to be cached on every model (4,096 tokens are 16,384 bytes).
var (
	bigSystem = strings.Repeat("You are a careful policy assistant. ", 500) // 18,000 bytes
	bigTask   = strings.Repeat("Here is the cluster inventory to review. ", 500)
)

// The canonical prefixes (cache.go): each section's and message's line, then each element
// marshalled, one a line; cache points left out.
var (
	prefixSystem = "tools\nsystem\n" + `{"text":"` + bigSystem + `"}` + "\n"
	prefixTask   = prefixSystem + "messages\nrole user\n" + `{"text":"` + bigTask + `"}` + "\n"
	prefixNext   = prefixTask + "role assistant\n" + `{"text":"Hello"}` + "\n" + "role user\n" + `{"text":"next"}` + "\n"
)

func systemOf(text, point string) string {
	return `"system":[{"text":"` + text + `"},` + point + `]`
}

func ttlPoint(ttl string) string { return `{"cachePoint":{"type":"default","ttl":"` + ttl + `"}}` }

// usageOf answers body on model through the handler and returns the answer's usage; it
// fails the test unless the request is answered, and checks the usage adds up.
func usageOf(t testing.TB, sim *Server, model, body string) tokenUsage {
	t.Helper()
	return usageWith(t, sim, "Bearer k", model, body)
}

// usageWith is usageOf with the Authorization header auth.
func usageWith(t testing.TB, sim *Server, auth, model, body string) tokenUsage {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/model/"+model+"/converse", strings.NewReader(body))
	r.Header.Set("Authorization", auth)
	w := httptest.NewRecorder()
	sim.ServeHTTP(w, r)
	if !assert.Equal(t, http.StatusOK, w.Code, "%s", w.Body) { // not require: also called off the test goroutine
		return tokenUsage{}
	}
	u := answerOf(t, w.Body.Bytes()).Usage
	// Input leaves out what the cache read and wrote; the total counts everything.
	assert.Equal(t, max(tokens(len(body)), u.CacheReadInputTokens+u.CacheWriteInputTokens),
		u.InputTokens+u.CacheReadInputTokens+u.CacheWriteInputTokens)
	assert.Equal(t, u.InputTokens+u.CacheReadInputTokens+u.CacheWriteInputTokens+u.OutputTokens, u.TotalTokens)
	if u.CacheReadInputTokens == 0 && u.CacheWriteInputTokens == 0 {
		assert.NotContains(t, w.Body.String(), "cache", "cache members are left out when zero")
	}
	return u
}

// cached is the cache part of a usage.
type cached struct {
	read, write int32
	details     []cacheDetail
}

func cacheOf(u tokenUsage) cached {
	return cached{u.CacheReadInputTokens, u.CacheWriteInputTokens, u.CacheDetails}
}

func five(n int32) []cacheDetail { return []cacheDetail{{TTL: ttl5m, InputTokens: n}} }

func TestPromptCacheReadWrite(t *testing.T) {
	t.Parallel()
	sim := New(Options{Now: newClock().Now})
	tSystem, tTask, tNext := tokens(len(prefixSystem)), tokens(len(prefixTask)), tokens(len(prefixNext))

	// First request: the prefix is written; the second identical one reads it.
	body := reqWith(systemOf(bigSystem, cachePt), hi)
	assert.Equal(t, cached{0, tSystem, five(tSystem)}, cacheOf(usageOf(t, sim, sonnet4, body)))
	assert.Equal(t, cached{tSystem, 0, nil}, cacheOf(usageOf(t, sim, sonnet4, body)))
	// The same foundation model through an inference profile shares the cache.
	assert.Equal(t, cached{tSystem, 0, nil}, cacheOf(usageOf(t, sim, sonnetID, body)))
	// Another model does not.
	assert.Equal(t, cached{0, tSystem, five(tSystem)}, cacheOf(usageOf(t, sim, "anthropic.claude-opus-4-20250514-v1:0", body)))

	// A longer history reads the longest remembered prefix and writes the rest.
	first := reqWith(systemOf(bigSystem, cachePt), user(`{"text":"`+bigTask+`"}`, cachePt))
	assert.Equal(t, cached{tSystem, tTask - tSystem, five(tTask - tSystem)}, cacheOf(usageOf(t, sim, sonnet4, first)))
	next := reqWith(systemOf(bigSystem, cachePt), user(`{"text":"`+bigTask+`"}`, cachePt), hello, user(`{"text":"next"}`, cachePt))
	assert.Equal(t, cached{tTask, tNext - tTask, five(tNext - tTask)}, cacheOf(usageOf(t, sim, sonnet4, next)))
	assert.Equal(t, cached{tNext, 0, nil}, cacheOf(usageOf(t, sim, sonnet4, next)))

	// A changed byte before a point misses it; the points before the change still hit.
	changed := reqWith(systemOf(bigSystem, cachePt), user(`{"text":"`+bigTask+`!"}`, cachePt))
	u := usageOf(t, sim, sonnet4, changed)
	assert.Equal(t, tSystem, u.CacheReadInputTokens)
	assert.Equal(t, tokens(len(prefixTask)+1)-tSystem, u.CacheWriteInputTokens)
}

func TestPromptCacheMinimum(t *testing.T) {
	t.Parallel()
	sim := New(Options{Now: newClock().Now})
	// Below Sonnet 4's 1,024 tokens a point is ignored, silently.
	short := reqWith(systemOf(strings.Repeat("x", 4000), cachePt), hi)
	assert.Equal(t, cached{}, cacheOf(usageOf(t, sim, sonnet4, short)))
	assert.Equal(t, cached{}, cacheOf(usageOf(t, sim, sonnet4, short)))
	// The same prefix counts on a model with a lower minimum... and not on one with a higher.
	long := reqWith(systemOf(strings.Repeat("x", 8000), cachePt), hi)
	tLong := tokens(len(`tools` + "\n" + `system` + "\n" + `{"text":"` + strings.Repeat("x", 8000) + `"}` + "\n"))
	assert.Equal(t, cached{0, tLong, five(tLong)}, cacheOf(usageOf(t, sim, sonnet4, long)))
	assert.Equal(t, cached{}, cacheOf(usageOf(t, sim, haiku35, long)), "3.5 Haiku starts at 2,048 tokens")
	// A short point before a long one: only the long one counts.
	mixed := reqWith(systemOf("Be brief.", cachePt), user(`{"text":"`+bigTask+`"}`, cachePt))
	tMixed := tokens(len("tools\nsystem\n" + `{"text":"Be brief."}` + "\n" + "messages\nrole user\n" + `{"text":"` + bigTask + `"}` + "\n"))
	assert.Equal(t, cached{0, tMixed, five(tMixed)}, cacheOf(usageOf(t, sim, sonnet4, mixed)))
}

func TestPromptCacheTTL(t *testing.T) {
	t.Parallel()
	c := newClock()
	sim := New(Options{Now: c.Now})
	tSystem := tokens(len(prefixSystem))
	body := reqWith(systemOf(bigSystem, cachePt), hi)
	assert.Equal(t, tSystem, usageOf(t, sim, sonnet4, body).CacheWriteInputTokens)
	c.Advance(4 * time.Minute)
	assert.Equal(t, tSystem, usageOf(t, sim, sonnet4, body).CacheReadInputTokens, "live after 4 minutes")
	c.Advance(4 * time.Minute)
	assert.Equal(t, tSystem, usageOf(t, sim, sonnet4, body).CacheReadInputTokens, "the hit renewed it")
	c.Advance(5 * time.Minute)
	assert.Equal(t, cached{0, tSystem, five(tSystem)}, cacheOf(usageOf(t, sim, sonnet4, body)), "expired")

	// 1h lives an hour, and a 5m point after it does not shorten it.
	long := reqWith(systemOf(bigSystem, ttlPoint("1h")), hi)
	tasked := reqWith(systemOf(bigSystem, ttlPoint("1h")), user(`{"text":"`+bigTask+`"}`, cachePt))
	tTask := tokens(len(prefixTask))
	assert.Equal(t, cached{0, tTask, []cacheDetail{{TTL: ttl1h, InputTokens: tSystem}, {TTL: ttl5m, InputTokens: tTask - tSystem}}},
		cacheOf(usageOf(t, sim, sonnet45, tasked)), "writes by TTL, 1h first")
	c.Advance(30 * time.Minute)
	assert.Equal(t, cached{tSystem, 0, nil}, cacheOf(usageOf(t, sim, sonnet45, long)))
	c.Advance(61 * time.Minute)
	assert.Equal(t, cached{0, tSystem, []cacheDetail{{TTL: ttl1h, InputTokens: tSystem}}}, cacheOf(usageOf(t, sim, sonnet45, long)))
}

func TestPromptCacheEviction(t *testing.T) {
	t.Parallel()
	sim := New(Options{Now: newClock().Now, PromptCacheEntries: 2})
	body := func(name string) string { return reqWith(systemOf(name+bigSystem, cachePt), hi) }
	hit := func(name string) bool {
		u := usageOf(t, sim, sonnet4, body(name))
		assert.LessOrEqual(t, sim.cache.len(), 2)
		return u.CacheReadInputTokens > 0
	}
	assert.False(t, hit("A"))
	assert.False(t, hit("B"))
	assert.True(t, hit("A"), "A is the most recent now")
	assert.False(t, hit("C"), "C evicts B, the least recently used")
	assert.True(t, hit("A"))
	assert.False(t, hit("B"), "B was evicted")
	assert.Equal(t, 2, sim.cache.len())

	assert.Equal(t, defaultCacheEntries, New(Options{}).cache.max)
}

// TestPromptCacheConcurrent: requests racing on the same and on different prefixes each see
// a whole read or a whole write (go test -race checks the locking).
func TestPromptCacheConcurrent(t *testing.T) {
	t.Parallel()
	sim := New(Options{PromptCacheEntries: 8})
	tSystem := tokens(len(prefixSystem))
	var wg sync.WaitGroup
	var mu sync.Mutex
	writes := 0
	for i := range 64 {
		wg.Go(func() {
			if i%2 == 1 { // churn: other prefixes, evicting one another
				usageOf(t, sim, sonnet4, reqWith(systemOf(fmt.Sprint(i)+bigSystem, cachePt), hi))
				return
			}
			u := usageOf(t, sim, sonnet4, reqWith(systemOf(bigSystem, cachePt), hi))
			assert.Contains(t, []cached{{tSystem, 0, nil}, {0, tSystem, five(tSystem)}}, cacheOf(u))
			if u.CacheWriteInputTokens > 0 {
				mu.Lock()
				writes++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	assert.GreaterOrEqual(t, writes, 1)
	assert.LessOrEqual(t, sim.cache.len(), 8)
}

// TestPromptCacheSDK: the real SDK reads the cache members, unary and in the stream's
// metadata.
func TestPromptCacheSDK(t *testing.T) {
	t.Parallel()
	client, _ := startSim(t, New(Options{}))
	tSystem := tokens(len(prefixSystem))
	system := []types.SystemContentBlock{
		&types.SystemContentBlockMemberText{Value: bigSystem},
		&types.SystemContentBlockMemberCachePoint{Value: types.CachePointBlock{Type: types.CachePointTypeDefault}},
	}
	out := converse(t, client, &bedrockruntime.ConverseInput{ModelId: aws.String(sonnet4), System: system, Messages: []types.Message{userText("Hi")}})
	require.NotNil(t, out.Usage.CacheWriteInputTokens)
	assert.Equal(t, tSystem, *out.Usage.CacheWriteInputTokens)
	assert.Nil(t, out.Usage.CacheReadInputTokens)
	require.Len(t, out.Usage.CacheDetails, 1)
	assert.Equal(t, types.CacheTTLFiveMinutes, out.Usage.CacheDetails[0].Ttl)
	assert.Equal(t, tSystem, *out.Usage.CacheDetails[0].InputTokens)

	out = converse(t, client, &bedrockruntime.ConverseInput{ModelId: aws.String(sonnet4), System: system, Messages: []types.Message{userText("Hi")}})
	require.NotNil(t, out.Usage.CacheReadInputTokens)
	assert.Equal(t, tSystem, *out.Usage.CacheReadInputTokens)
	assert.Nil(t, out.Usage.CacheWriteInputTokens)
	assert.Equal(t, *out.Usage.InputTokens+tSystem+*out.Usage.OutputTokens, *out.Usage.TotalTokens)

	stream, err := client.ConverseStream(t.Context(), &bedrockruntime.ConverseStreamInput{ModelId: aws.String(sonnet4), System: system, Messages: []types.Message{userText("Hi")}})
	require.NoError(t, err)
	s := collect(t, stream)
	require.NoError(t, s.err)
	require.NotNil(t, s.usage.CacheReadInputTokens)
	assert.Equal(t, tSystem, *s.usage.CacheReadInputTokens)
}

// TestPromptCacheNotOnRefusal: a refused request, or one a fault answers, leaves the cache as
// it was.
func TestPromptCacheNotOnRefusal(t *testing.T) {
	t.Parallel()
	sim := New(Options{Faults: []Fault{{Kind: FaultThrottle, Times: 1}}})
	body := reqWith(systemOf(bigSystem, cachePt), hi)
	r := httptest.NewRequest(http.MethodPost, "/model/"+sonnet4+"/converse", strings.NewReader(body))
	r.Header.Set("Authorization", "Bearer k")
	w := httptest.NewRecorder()
	sim.ServeHTTP(w, r)
	require.Equal(t, http.StatusTooManyRequests, w.Code)
	assert.Equal(t, 0, sim.cache.len())
	assert.Positive(t, usageOf(t, sim, sonnet4, body).CacheWriteInputTokens)
}

// TestPromptCachePerRegion: each region keeps its own prompt cache, as Bedrock's do, so a
// call that fails over to another region writes its prefix anew.
func TestPromptCachePerRegion(t *testing.T) {
	t.Parallel()
	sim := New(Options{Now: newClock().Now})
	signed := func(region string) string {
		return "AWS4-HMAC-SHA256 Credential=AKID/20260101/" + region + "/bedrock/aws4_request, SignedHeaders=host, Signature=00"
	}
	body := reqWith(systemOf(bigSystem, cachePt), hi)
	east := usageWith(t, sim, signed("us-east-1"), sonnet4, body)
	require.Positive(t, east.CacheWriteInputTokens)
	west := usageWith(t, sim, signed("us-west-2"), sonnet4, body)
	assert.Zero(t, west.CacheReadInputTokens, "another region's cache")
	assert.Equal(t, east.CacheWriteInputTokens, west.CacheWriteInputTokens)
	again := usageWith(t, sim, signed("us-east-1"), sonnet4, body)
	assert.Equal(t, east.CacheWriteInputTokens, again.CacheReadInputTokens, "the same region's cache")
}

// TestPromptCacheLookback: on Claude a point also hits a prefix cached at one of the 20
// blocks before it (docs/BEDROCK.md H8), so the point an agent moves to the end of its
// history every turn reads the last turn's prefix; on Nova, which has no such check, it
// misses.
func TestPromptCacheLookback(t *testing.T) {
	t.Parallel()
	sim := New(Options{Now: newClock().Now})
	tTask, tNext := tokens(len(prefixTask)), tokens(len(prefixNext))
	turn1 := reqWith(systemOf(bigSystem, ""), user(`{"text":"`+bigTask+`"}`, cachePt))
	turn1 = strings.Replace(turn1, `"},]`, `"}]`, 1)
	assert.Equal(t, cached{0, tTask, five(tTask)}, cacheOf(usageOf(t, sim, sonnet4, turn1)))
	// Turn 2 has its only point after its own last block; the point of turn 1 is gone.
	turn2 := reqWith(systemOf(bigSystem, ""), user(`{"text":"`+bigTask+`"}`), hello, user(`{"text":"next"}`, cachePt))
	turn2 = strings.Replace(turn2, `"},]`, `"}]`, 1)
	assert.Equal(t, cached{tTask, tNext - tTask, five(tNext - tTask)}, cacheOf(usageOf(t, sim, sonnet4, turn2)))

	// Nova: explicit points only.
	const nova = "amazon.nova-pro-v1:0"
	usageOf(t, sim, nova, turn1)
	u := usageOf(t, sim, nova, turn2)
	assert.Zero(t, u.CacheReadInputTokens)
	assert.Equal(t, tNext, u.CacheWriteInputTokens)
}
