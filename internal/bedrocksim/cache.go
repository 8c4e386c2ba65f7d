package bedrocksim

import (
	"container/list"
	"crypto/sha256"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Prompt caching (docs/BEDROCK.md H). A request's content is read in Bedrock's order: the
// entries of toolConfig.tools, then system, then the messages. Every cachePoint marks the
// prefix of everything before it. validate checks the points (checkCachePoints); the Server
// then remembers prefixes and reports what a request read from and wrote to the cache
// (promptCache.account).

// cacheWalk is a request's content laid out for the cache: the canonical bytes of the
// content, and its cache points, each with the length of the prefix it marks.
type cacheWalk struct {
	// canonical is the content in order, each element marshalled from its decoded form (raw
	// JSON values, such as tool inputs and schemas, as received), one a line, with a line
	// for each section and message role; outputConfig, when sent, is the first line. Cache points are left out: where points stand does
	// not change what is cached.
	canonical []byte
	points    []walkedPoint
	// bounds are the lengths of canonical at the end of each content block: where a prefix
	// may end.
	bounds []int
}

// walkedPoint is one cache point of a request.
type walkedPoint struct {
	cp *cachePointBlock
	// where is the point's Converse path, for the simulator's own texts:
	// "toolConfig.tools.1", "system.2", "messages.0.content.3".
	where string
	// carrier is the Anthropic path of the block the point marks (the block before it, cache
	// points not counted), as H3's text names it: "tools.0", "system.1", "messages.0.content.2".
	carrier string
	// after is what comes right before the point in its list: afterNothing, afterReasoning,
	// afterDocument (not a PDF) or afterContent.
	after   int
	inTools bool
	// bound is the index in bounds of the block before the point: its prefix ends there.
	bound int
}

const (
	afterNothing = iota
	afterContent
	afterReasoning
	afterDocument
)

// walkCache lays out req for the cache. The canonical bytes are built only when the request
// has a cache point.
func walkCache(req *converseRequest) cacheWalk {
	var w cacheWalk
	if !hasCachePoint(req) {
		return w
	}
	// Structured output comes first: a changed schema makes every prefix a miss (H7).
	if req.OutputConfig != nil {
		w.canonical = append(w.canonical, "outputConfig "...)
		w.canonical = append(w.canonical, marshal(req.OutputConfig)...)
		w.canonical = append(w.canonical, '\n')
	}
	w.canonical = append(w.canonical, "tools\n"...)
	if tc := req.ToolConfig; tc != nil {
		n, after := 0, afterNothing
		for i, t := range tc.Tools {
			if t.CachePoint != nil {
				w.point(t.CachePoint, fmt.Sprintf("toolConfig.tools.%d", i), carrier("tools.", n), after, true)
				continue
			}
			w.line(marshal(t))
			n, after = n+1, afterContent
		}
	}
	w.canonical = append(w.canonical, "system\n"...)
	n, after := 0, afterNothing
	for i, b := range req.System {
		if b.CachePoint != nil {
			w.point(b.CachePoint, fmt.Sprintf("system.%d", i), carrier("system.", n), after, false)
			continue
		}
		w.line(marshal(b))
		n, after = n+1, afterContent
	}
	w.canonical = append(w.canonical, "messages\n"...)
	for i, msg := range req.Messages {
		w.canonical = append(w.canonical, "role "+msg.Role+"\n"...)
		n, after := 0, afterNothing
		for j, b := range msg.Content {
			if b.CachePoint != nil {
				w.point(b.CachePoint, fmt.Sprintf("messages.%d.content.%d", i, j), carrier(fmt.Sprintf("messages.%d.content.", i), n), after, false)
				continue
			}
			w.line(marshal(b))
			n, after = n+1, afterContent
			switch {
			case b.ReasoningContent != nil:
				after = afterReasoning
			case b.Document != nil && b.Document.Format != "pdf":
				after = afterDocument
			}
		}
	}
	return w
}

// line adds a content block: its bytes, and the bound after it.
func (w *cacheWalk) line(b []byte) {
	w.canonical = append(w.canonical, b...)
	w.canonical = append(w.canonical, '\n')
	w.bounds = append(w.bounds, len(w.canonical))
}

// point adds a cache point; its prefix ends at the last bound (-1: nothing before it, which
// checkCachePoints refuses).
func (w *cacheWalk) point(cp *cachePointBlock, where, carrier string, after int, inTools bool) {
	w.points = append(w.points, walkedPoint{cp: cp, where: where, carrier: carrier, after: after, inTools: inTools, bound: len(w.bounds) - 1})
}

// carrier is the path of the block a point marks, the last of the n blocks before it in the
// list at path prefix; "" when there is none.
func carrier(prefix string, n int) string {
	if n == 0 {
		return ""
	}
	return prefix + strconv.Itoa(n-1)
}

func hasCachePoint(req *converseRequest) bool {
	if tc := req.ToolConfig; tc != nil {
		for _, t := range tc.Tools {
			if t.CachePoint != nil {
				return true
			}
		}
	}
	for _, b := range req.System {
		if b.CachePoint != nil {
			return true
		}
	}
	for _, msg := range req.Messages {
		for _, b := range msg.Content {
			if b.CachePoint != nil {
				return true
			}
		}
	}
	return false
}

// ttlOf is a point's TTL name; absent means 5m.
func ttlOf(cp *cachePointBlock) string {
	if cp.TTL == "" {
		return ttl5m
	}
	return cp.TTL
}

// checkCachePoints enforces H1 to H5 (A22 among them) on model m, in the order tools → system
// → messages, and keeps the walk in req for the cache. Texts: A22, H3 and H4's reasoning text
// are Bedrock's verbatim; "There is nothing available to cache. …" is Bedrock's as
// opencode#29728 quotes it in full (H4 quotes its start), and the simulator gives it for a
// point right after a non-PDF document too, where opencode saw it; the texts for a model
// without caching, without the 1h TTL, or without points on tools (Nova) are the simulator's
// own, in rule A12's words.
func checkCachePoints(m ModelInfo, req *converseRequest) *apiError {
	w := walkCache(req)
	if n := len(w.points); n > maxCachePoints {
		return validation(fmt.Sprintf("The model returned the following errors: A maximum of %d blocks with cache_control may be provided. Found %d.", maxCachePoints, n))
	}
	seen5m := false
	for _, p := range w.points {
		switch {
		case m.CacheMinTokens == 0, p.inTools && m.NoToolCachePoint:
			return validation(fmt.Sprintf("This model doesn't support the %s.cachePoint field. Remove %s.cachePoint and try again", p.where, p.where))
		case p.cp.TTL == ttl1h && !m.Cache1h:
			return validation(fmt.Sprintf("This model doesn't support the value 1h of %s.cachePoint.ttl. Remove the ttl, or set it to 5m, and try again", p.where))
		case p.after == afterNothing, p.after == afterDocument:
			return validation("There is nothing available to cache. Please remove the invalid cache point and try again.")
		case p.after == afterReasoning:
			return validation("Cache point cannot be inserted after reasoning block. Please remove the invalid cache point and try again.")
		case ttlOf(p.cp) == ttl1h && seen5m:
			return validation(p.carrier + ".cache_control.ttl: a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block. Note that blocks are processed in the following order: `tools`, `system`, `messages`.")
		}
		seen5m = seen5m || ttlOf(p.cp) == ttl5m
	}
	req.cache = w
	return nil
}

// defaultCacheEntries bounds the prompt cache when Options leave it 0.
const defaultCacheEntries = 4096

// cacheTTLs are the lifetimes of the TTL names.
var cacheTTLs = map[string]time.Duration{ttl5m: 5 * time.Minute, ttl1h: time.Hour}

// cachePrefix is a point that counts: its prefix reaches the model's minimum.
type cachePrefix struct {
	prefixKey
	ttl string
	// lookback are the prefixes ending at the blocks before the point, nearest first, that
	// a point may also hit (Claude's automatic prefix check, H8).
	lookback []prefixKey
}

// prefixKey names a prefix: a hash chained over the region, the foundation-model id and the
// canonical bytes up to a bound, and its tokens.
type prefixKey struct {
	key    [sha256.Size]byte
	tokens int32
}

// lookbackBlocks is how many blocks before a point Claude checks for a cached prefix
// (docs/BEDROCK.md H8: "about 20").
const lookbackBlocks = 20

// prefixes are the points of a validated request that count on model m (H6), each with its
// key and tokens, and on Claude the prefixes its lookback may hit. Each region keeps its
// own cache, as Bedrock's do: region is the request's (SigningRegion).
func prefixes(m ModelInfo, region string, req *converseRequest) []cachePrefix {
	w := &req.cache
	if len(w.points) == 0 {
		return nil
	}
	// The key of every bound, chained so the whole walk is hashed once.
	keys := make([][sha256.Size]byte, len(w.bounds))
	chain := sha256.Sum256([]byte(region + "/" + m.ID))
	prev := 0
	for i, end := range w.bounds {
		h := sha256.New()
		h.Write(chain[:])
		h.Write(w.canonical[prev:end])
		h.Sum(chain[:0])
		keys[i], prev = chain, end
	}
	at := func(b int) (prefixKey, bool) {
		t := tokens(w.bounds[b])
		return prefixKey{key: keys[b], tokens: t}, int(t) >= m.CacheMinTokens
	}
	lookback := strings.HasPrefix(m.ID, "anthropic.") || strings.HasPrefix(m.ID, "arn:")
	var out []cachePrefix
	for _, p := range w.points {
		k, ok := at(p.bound)
		if !ok {
			continue // too short: ignored, silently, as Bedrock does
		}
		cp := cachePrefix{prefixKey: k, ttl: ttlOf(p.cp)}
		for b := p.bound - 1; lookback && b >= 0 && b >= p.bound-lookbackBlocks; b-- {
			if k, ok := at(b); ok {
				cp.lookback = append(cp.lookback, k)
			}
		}
		out = append(out, cp)
	}
	return out
}

// promptCache remembers the prefixes cache points marked, until their TTL runs out, as a
// bounded LRU. It is safe for concurrent use.
type promptCache struct {
	max int

	mu      sync.Mutex
	order   *list.List // of *cacheEntry, most recently used first
	entries map[[sha256.Size]byte]*list.Element
}

type cacheEntry struct {
	key     [sha256.Size]byte
	expires time.Time
}

func newPromptCache(max int) *promptCache {
	if max <= 0 {
		max = defaultCacheEntries
	}
	return &promptCache{max: max, order: list.New(), entries: map[[sha256.Size]byte]*list.Element{}}
}

// account is one request's use of the cache, its points in order. The hit is the last point
// whose prefix is remembered and live, or failing that one its lookback finds (the nearest
// block first): read is its tokens. write is what the last point adds
// to it, when that point comes after the hit, broken down by the TTL of the point that ends
// each part (details, 1h first). Then every point's prefix is remembered until now + its TTL
// (a hit is renewed, never shortened).
func (c *promptCache) account(points []cachePrefix, now time.Time) (read, write int32, details []cacheDetail) {
	if len(points) == 0 {
		return 0, 0, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// written is the first point that writes: the one after a hit on a point, the hit
	// point itself when its lookback hit.
	written := 0
hits:
	for i := len(points) - 1; i >= 0; i-- {
		if c.live(points[i].key, now) {
			read, written = points[i].tokens, i+1
			break
		}
		for _, lb := range points[i].lookback {
			if c.live(lb.key, now) {
				read, written = lb.tokens, i
				c.put(lb.key, now.Add(cacheTTLs[points[i].ttl]))
				break hits
			}
		}
	}
	if last := len(points) - 1; last >= written {
		write = points[last].tokens - read
		byTTL := map[string]int32{}
		prev := read
		for _, p := range points[written:] {
			byTTL[p.ttl] += p.tokens - prev
			prev = p.tokens
		}
		for _, ttl := range []string{ttl1h, ttl5m} {
			if n := byTTL[ttl]; n > 0 {
				details = append(details, cacheDetail{TTL: ttl, InputTokens: n})
			}
		}
	}
	for _, p := range points {
		c.put(p.key, now.Add(cacheTTLs[p.ttl]))
	}
	return read, write, details
}

// live reports whether key is remembered and not expired at now; an expired entry goes.
func (c *promptCache) live(key [sha256.Size]byte, now time.Time) bool {
	e, ok := c.entries[key]
	if !ok {
		return false
	}
	if !now.Before(e.Value.(*cacheEntry).expires) {
		c.order.Remove(e)
		delete(c.entries, key)
		return false
	}
	return true
}

// put remembers key until expires (or later, if it is remembered longer), as the most
// recently used entry, and forgets the least recently used ones beyond the bound.
func (c *promptCache) put(key [sha256.Size]byte, expires time.Time) {
	if e, ok := c.entries[key]; ok {
		entry := e.Value.(*cacheEntry)
		if expires.After(entry.expires) {
			entry.expires = expires
		}
		c.order.MoveToFront(e)
		return
	}
	c.entries[key] = c.order.PushFront(&cacheEntry{key: key, expires: expires})
	for c.order.Len() > c.max {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.entries, oldest.Value.(*cacheEntry).key)
	}
}

// len is the number of remembered prefixes, expired ones included until looked up.
func (c *promptCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
