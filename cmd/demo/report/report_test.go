package report

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/nirmata/llm-gateway/internal/chat"
)

func TestShares(t *testing.T) {
	for _, c := range []struct {
		parts, want []int64
	}{
		// make demo's caching-on loop: rounded one by one, 1.5%, 87.5% and 10.9% (or 2%,
		// 88% and 11% in whole percents, 101% in all); the tenth left over goes to the
		// largest remainder, 87.5's.
		{[]int64{760, 43238, 5395}, []int64{15, 876, 109}},
		{[]int64{1, 1, 1}, []int64{334, 333, 333}},         // a tie: the first part
		{[]int64{2, 1, 1, 2}, []int64{333, 167, 167, 333}}, // exact 333.3, 166.7, 166.7, 333.3
		{[]int64{49110, 0, 0}, []int64{1000, 0, 0}},
		{[]int64{0, 0, 0}, []int64{0, 0, 0}},
		{[]int64{1, 999_999}, []int64{0, 1000}},
	} {
		if got := shares(c.parts...); !slices.Equal(got, c.want) {
			t.Errorf("shares(%v) = %v, want %v", c.parts, got, c.want)
		}
	}
}

// TestSharesAddUp checks, over many proportions, that the shares add up to exactly 100.0%
// and that each is its exact share rounded down or up.
func TestSharesAddUp(t *testing.T) {
	for a := int64(0); a < 40; a++ {
		for b := int64(0); b < 40; b++ {
			for _, c := range []int64{1, 7, 333, 49110} {
				parts := []int64{a * 97, b * 13, c}
				got := shares(parts...)
				total, sum := parts[0]+parts[1]+parts[2], int64(0)
				for i, s := range got {
					sum += s
					if floor := parts[i] * 1000 / total; s != floor && s != floor+1 {
						t.Fatalf("shares(%v)[%d] = %d, not %d or %d", parts, i, s, floor, floor+1)
					}
				}
				if sum != 1000 {
					t.Fatalf("shares(%v) = %v, adding up to %d, not 1000", parts, got, sum)
				}
			}
		}
	}
}

func TestPrice(t *testing.T) {
	// Anthropic's table lists Claude Sonnet 4's cache write at $3.75 and its cache read at
	// $0.30 per million tokens: the multipliers give the same.
	if got := Sonnet4.CacheWrite(); got != 3_750_000 {
		t.Errorf("cache write = %d millionths of a dollar per million tokens, want 3,750,000", got)
	}
	if got := Sonnet4.CacheRead(); got != 300_000 {
		t.Errorf("cache read = %d millionths of a dollar per million tokens, want 300,000", got)
	}
	for _, c := range []struct {
		u    Usage
		want Money
	}{
		{Usage{Full: 1_000_000}, 3_000_000_000_000},
		{Usage{Output: 1_000_000}, 15_000_000_000_000},
		{Usage{CacheWrite: 1_000_000}, 3_750_000_000_000},
		{Usage{CacheRead: 1_000_000}, 300_000_000_000},
		// 760 × $3 + 43,238 × $0.30 + 5,395 × $3.75 + 1,356 × $15, per million tokens.
		{Usage{Full: 760, CacheRead: 43238, CacheWrite: 5395, Output: 1356}, 55_822_650_000},
	} {
		if got := Sonnet4.Cost(c.u); got != c.want {
			t.Errorf("Cost(%+v) = %d picodollars, want %d", c.u, got, c.want)
		}
	}
}

func TestFormats(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Money(55_822_650_000).String(), "$0.0558"},
		{Money(49_999_999).String(), "$0.0000"},
		{Money(50_000_000).String(), "$0.0001"}, // half up
		{Money(12_345_678_900_000).String(), "$12.3457"},
		{percent(876), "87.6%"},
		{percent(1000), "100.0%"},
		{percent(0), "0.0%"},
		{count(0), "0"},
		{count(999), "999"},
		{count(1000), "1,000"},
		{count(49110), "49,110"},
		{count(1234567), "1,234,567"},
		{perMillion(3_750_000), "$3.75"},
		{perMillion(300_000), "$0.30"},
		{perMillion(15_000_000), "$15.00"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	if got := ratio(1119, 1677); got != 667 {
		t.Errorf("ratio(1119, 1677) = %d tenths of a percent, want 667", got)
	}
}

func TestThinkingLabel(t *testing.T) {
	for header, want := range map[string]string{
		"":                            "on",
		chat.ThinkingRestored:         "on, blocks put back",
		chat.ThinkingMissingSignature: "off, blocks lost",
	} {
		if got := thinkingLabel(header); got != want {
			t.Errorf("thinkingLabel(%q) = %q, want %q", header, got, want)
		}
	}
}

// loopOf is a run of n turns, each with usage u and thinking header h, the last the answer.
func loopOf(thinking bool, n int, first, rest Usage, h string) Run {
	r := Run{Thinking: thinking}
	for i := range n {
		turn := Turn{Tool: "get_pods", Usage: rest, Thinking: h}
		if i == 0 {
			turn.Usage, turn.Thinking = first, ""
		}
		if i == n-1 {
			turn.Tool = ""
		}
		r.Turns = append(r.Turns, turn)
	}
	return r
}

func TestWrite(t *testing.T) {
	r := Runs{
		CachingOff:   loopOf(false, 3, Usage{Full: 1000, Output: 10}, Usage{Full: 1100, Output: 10}, ""),
		CachingOn:    loopOf(false, 3, Usage{Full: 10, CacheWrite: 990, Output: 10}, Usage{Full: 10, CacheRead: 990, CacheWrite: 100, Output: 10}, ""),
		ThinkingKept: loopOf(true, 3, Usage{Full: 10, CacheWrite: 990, Output: 30}, Usage{Full: 10, CacheRead: 1000, CacheWrite: 120, Output: 30}, chat.ThinkingRestored),
		ThinkingLost: loopOf(true, 3, Usage{Full: 10, CacheWrite: 990, Output: 30}, Usage{Full: 10, CacheRead: 990, CacheWrite: 100, Output: 10}, chat.ThinkingMissingSignature),
	}
	var b strings.Builder
	if err := Write(&b, Sonnet4, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Log("\n" + out)

	// The costs, by hand, in millionths of a dollar: off 3,200 × 3 + 30 × 15 = 10,050;
	// on 30 × 3 + 1,980 × 0.30 + 1,190 × 3.75 + 30 × 15 = 5,596.5; kept 30 × 3 + 2,000 × 0.30
	// + 1,230 × 3.75 + 90 × 15 = 6,652.5; lost 30 × 3 + 1,980 × 0.30 + 1,190 × 3.75 + 50 × 15
	// = 5,896.5. Caching saves 4,453.5 (44.3%); losing thinking 756 (11.4% of kept).
	if !strings.HasPrefix(out, "An agent's ten-step tool loop on Claude Sonnet 4 (us.anthropic.claude-sonnet-4-20250514-v1:0):\n") {
		t.Errorf("the report does not open with the headline:\n%s", out)
	}
	for _, want := range []string{
		`\n  1\. prompt caching off +\$0\.0101 +3,200 +30 +not asked\n`,
		`\n  2\. prompt caching on +\$0\.0056 +3,200 +30 +not asked\n`,
		`\n  3\. caching on, thinking kept +\$0\.0067 +3,260 +90 +3 of 3 turns\n`,
		`\n  4\. caching on, thinking lost +\$0\.0059 +3,200 +50 +1 of 3 turns\n`,
		`\nPrompt caching \(2 against 1\): \$0\.0056 instead of \$0\.0101 a loop, 44\.3% less\.\n`,
		`so the model thinks on 1 of 3 turns instead of 3\.\nThat saves \$0\.0008 a loop, 11\.4% of 3's cost`,
		`and loses the model's reasoning on the other 2 turns\.\n`,
		`input \$3\.00, output \$15\.00, cache write \$3\.75, cache read \$0\.30\.\n`,
		`read 2026-11-29`,
		// Each table's total row, and a turn of 3's and 4's.
		`\n +total +3,200 +0 +0 +30 +\$0\.0101\n`,
		`\n +2 +get_pods +10 +1,000 +120 +30 +\$0\.0012 +on, blocks put back\n`,
		`\n +3 +\(answer\) +10 +990 +100 +10 +\$0\.0009 +off, blocks lost\n`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("the report lacks %s", want)
		}
	}
	if strings.Index(out, "Prompt caching (2 against 1)") > strings.Index(out, "1. Prompt caching off\n") {
		t.Error("the headline comes after the tables")
	}
	if strings.Contains(out, "disabled-") {
		t.Error("the report shows the gateway's internal thinking outcome names")
	}

	// Every share row adds up to 100.0%.
	rows := regexp.MustCompile(`share of input +([0-9.]+)% +([0-9.]+)% +([0-9.]+)%`).FindAllStringSubmatch(out, -1)
	if len(rows) != 4 {
		t.Fatalf("%d share rows, want 4", len(rows))
	}
	for _, row := range rows {
		var tenths int64
		for _, p := range row[1:] {
			n, err := strconv.ParseInt(strings.Replace(p, ".", "", 1), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			tenths += n
		}
		if tenths != 1000 {
			t.Errorf("%q adds up to %s", row[0], percent(tenths))
		}
	}
}
