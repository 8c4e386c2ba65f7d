// Package capabilities knows what each Bedrock model family supports for tool use
// (docs/BEDROCK.md section F), so the translator can gate tool_choice and streaming, and the
// capabilities endpoint can tell clients before they call.
package capabilities

import (
	"strconv"
	"strings"
)

// Bedrock toolChoice kinds.
const (
	ChoiceAuto = "auto"
	ChoiceAny  = "any"
	ChoiceTool = "tool"
)

// Model is what one model supports. The zero value supports nothing.
type Model struct {
	// ID is the model id as the client gave it.
	ID string
	// Family is the foundation-model id with region prefix and ARN stripped
	// ("anthropic.claude-sonnet-4-20250514-v1:0"), or "" when it cannot be told.
	Family string
	// Known is false for families outside the table; they are assumed to support tools and
	// streaming tools, and Bedrock's answer decides.
	Known bool
	// Tools: the model accepts toolConfig.
	Tools bool
	// StreamingTools: ConverseStream works with tools; without it the gateway calls
	// Converse and synthesizes the stream.
	StreamingTools bool
	// ToolChoice lists the toolChoice kinds the model accepts (auto, any, tool).
	ToolChoice []string
	// NoPrefill: the model refuses a conversation that ends with an assistant turn.
	NoPrefill bool
	// NoTemperatureWithTopP: the model refuses temperature and topP together.
	NoTemperatureWithTopP bool
	// NoBlankStop: the model refuses a stop sequence of only whitespace.
	NoBlankStop bool
	// MaxOutput is the most tokens the model writes in one answer, the largest maxTokens
	// it takes; 0 when the table does not know it.
	MaxOutput int32
	Features
}

// SupportsChoice reports whether the model accepts the toolChoice kind.
func (m Model) SupportsChoice(kind string) bool {
	for _, k := range m.ToolChoice {
		if k == kind {
			return true
		}
	}
	return false
}

var (
	allChoices = []string{ChoiceAuto, ChoiceAny, ChoiceTool}
	autoOnly   = []string{ChoiceAuto}
	autoAny    = []string{ChoiceAuto, ChoiceAny}
)

// family is one row of the table: model ids starting with prefix.
type family struct {
	prefix         string
	tools          bool
	streamingTools bool
	toolChoice     []string
	maxOutput      int32 // 0: unknown
}

// llama3MaxOutput is the most tokens Meta's Llama 3 models (3.0 to 3.3) write on Bedrock:
// docs/PROTOCOL.md 14.5's "some Llama models stop at 2048", Bedrock's max_gen_len limit
// for them. Not verified against AWS's pages from here; Llama 4 is left unknown.
const llama3MaxOutput = 2048

// Output maxima below the default_max_tokens default (4096) beside Llama 3's, so that the
// default does not make a request Bedrock refuses: Titan Text Premier's maxTokenCount tops
// out at 3,072 and Cohere Command R and R+ write at most 4,000 tokens (AWS's model parameter
// pages as we know them; not verified against them from here).
const (
	// novaMaxOutput: Nova's request schema takes maxTokens from 1 to 5000 (the Nova user
	// guide's complete request schema); Premier's is left unknown.
	novaMaxOutput         = 5000
	titanPremierMaxOutput = 3072
	commandRMaxOutput     = 4000
)

// families is docs/BEDROCK.md section F. Longer prefixes come before shorter ones they share a
// start with, because the first match wins.
var families = []family{
	{"anthropic.claude", true, true, allChoices, 0},
	{"amazon.nova-premier", true, true, allChoices, 0},
	{"amazon.nova-", true, true, allChoices, novaMaxOutput},
	{"amazon.titan-text-premier", false, false, nil, titanPremierMaxOutput},
	{"amazon.titan-text", false, false, nil, 0},
	{"ai21.jamba-1-5", true, true, autoOnly, 0},
	{"meta.llama3-1-", true, false, autoOnly, llama3MaxOutput},
	{"meta.llama3-2-11b", true, false, autoOnly, llama3MaxOutput},
	{"meta.llama3-2-90b", true, false, autoOnly, llama3MaxOutput},
	{"meta.llama3-2-", false, false, nil, llama3MaxOutput}, // 1b and 3b
	{"meta.llama3-3-", true, false, autoOnly, llama3MaxOutput},
	{"meta.llama4-", true, false, autoOnly, 0},
	{"meta.llama3-", false, false, nil, llama3MaxOutput}, // Llama 3.0
	{"mistral.mistral-large", true, false, autoAny, 0},
	{"mistral.mistral-7b", false, false, nil, 0},
	{"mistral.mixtral", false, false, nil, 0},
	{"cohere.command-r", true, false, autoOnly, commandRMaxOutput},
	// F.2's reasoning families: Bedrock takes forced tool choices on both (peers' threads).
	{"openai.gpt-oss", true, true, allChoices, 0},
	{"deepseek.v3", true, true, allChoices, 0},
}

// regionPrefixes are the cross-region inference-profile prefixes.
var regionPrefixes = []string{"us.", "eu.", "apac.", "global.", "us-gov.", "jp.", "au.", "ca."}

// Foundation is the foundation model a model id calls, which reasoning blocks are bound to
// (docs/BEDROCK.md G9): FamilyOf, or the id itself when it names none (an application
// inference profile is its own).
func Foundation(modelID string) string {
	if f := FamilyOf(modelID); f != "" {
		return f
	}
	return modelID
}

// FamilyOf strips an ARN and a cross-region prefix from a model id, leaving the
// foundation-model id. Application inference profiles and provisioned models are opaque:
// it returns "" for them.
func FamilyOf(modelID string) string {
	id := modelID
	if strings.HasPrefix(id, "arn:") {
		i := strings.LastIndexByte(id, '/')
		if i < 0 {
			return ""
		}
		kind := id[strings.LastIndexByte(id[:i], ':')+1 : i]
		if kind != "foundation-model" && kind != "inference-profile" {
			return ""
		}
		id = id[i+1:]
	}
	for _, p := range regionPrefixes {
		if strings.HasPrefix(id, p) {
			return id[len(p):]
		}
	}
	return id
}

// IsModelID reports whether id has the shape of a model identifier Bedrock's Converse may
// accept: an ARN of Bedrock or SageMaker (a foundation model's, an inference profile's, a
// provisioned, custom or imported model's), or an id that names its provider,
// "provider.model", possibly behind an inference profile's geography ("us.provider.model"):
// a provider segment of lower-case letters, digits and '-', starting with a letter, then a
// model segment starting with a lower-case letter, in the characters Bedrock's ids use
// (letters, digits, '.', '-' and ':'). It does not say that Bedrock serves the model (only
// Bedrock knows, and new models appear every week); names of other services' models
// ("gpt-4o", "gpt-4.1", "claude-3.5-sonnet") fail it (docs/PROTOCOL.md 4).
func IsModelID(id string) bool {
	if rest, ok := strings.CutPrefix(id, "arn:"); ok {
		// partition, service, region, account (empty for foundation models), resource
		p := strings.SplitN(rest, ":", 5)
		return len(p) == 5 && strings.HasPrefix(p[0], "aws") && (p[1] == "bedrock" || p[1] == "sagemaker") &&
			p[4] != "" && strings.IndexFunc(id, func(r rune) bool { return r <= ' ' || r > '~' }) < 0
	}
	provider, model, ok := strings.Cut(id, ".")
	if !ok || provider == "" || model == "" || !lower(provider[0]) || !lower(model[0]) {
		return false
	}
	for i := range len(provider) {
		if c := provider[i]; !lower(c) && !digit(c) && c != '-' {
			return false
		}
	}
	for i := range len(model) {
		if c := model[i]; !lower(c) && !digit(c) && !(c >= 'A' && c <= 'Z') && c != '.' && c != '-' && c != ':' {
			return false
		}
	}
	return true
}

func lower(c byte) bool { return c >= 'a' && c <= 'z' }
func digit(c byte) bool { return c >= '0' && c <= '9' }

// Lookup tells what the model supports.
func Lookup(modelID string) Model {
	m := Model{ID: modelID, Family: FamilyOf(modelID)}
	for _, f := range families {
		if strings.HasPrefix(m.Family, f.prefix) {
			m.Known = true
			m.Tools, m.StreamingTools, m.ToolChoice, m.MaxOutput = f.tools, f.streamingTools, f.toolChoice, f.maxOutput
			break
		}
	}
	if !m.Known {
		m.Tools, m.StreamingTools, m.ToolChoice = true, true, allChoices
	}
	m.Features = featuresOf(m.Family)
	// Anthropic's models refuse a stop sequence of only whitespace ("\n"), which OpenAI's
	// clients send.
	m.NoBlankStop = strings.HasPrefix(m.Family, "anthropic.")
	if tier, major, minor, ok := claudeVersion(m.Family); ok {
		v := major*10 + minor
		// Claude Sonnet 4.5, Haiku 4.5, Opus 4.1 and later refuse temperature with top_p.
		m.NoTemperatureWithTopP = v >= 45 || (tier == "opus" && v >= 41)
		// Claude Opus 4.6, Sonnet 4.6 and later refuse assistant prefill.
		m.NoPrefill = v >= 46
		m.MaxOutput = claudeMaxOutput(tier, v)
	}
	return m
}

// claudeMaxOutput is the largest max_tokens of a Claude model of tier and version v (37
// for 3.7), Anthropic's models overview: 4,096 for Claude 3, 8,192 for 3.5, 64,000 from
// 3.7 Sonnet (128,000 with its beta) on, but 32,000 for Opus 4 and 4.1 and 128,000 for
// Opus 4.6 and later and every Claude 5 model (Claude Code asks the 5.5 models for 128,000).
func claudeMaxOutput(tier string, v int) int32 {
	switch {
	case v < 35:
		return 4096
	case v < 37:
		return 8192
	case tier == "opus" && v < 45:
		return 32000
	case v >= 50 || tier == "opus" && v >= 46:
		return 128000
	}
	return 64000
}

// claudeVersion reads the tier and version from a Claude family id. Two spellings exist:
// "anthropic.claude-3-5-sonnet-20240620-v1:0" (version first) and
// "anthropic.claude-sonnet-4-5-20250929-v1:0" (tier first). Version numbers have one or two
// digits; a date has eight.
func claudeVersion(family string) (tier string, major, minor int, ok bool) {
	rest, found := strings.CutPrefix(family, "anthropic.claude-")
	if !found {
		return "", 0, 0, false
	}
	for rest != "" { // the parts between "-", without a slice of them: every request looks its model up
		var p string
		p, rest, _ = strings.Cut(rest, "-")
		if n, isNum := smallNumber(p); isNum && !ok {
			major, ok = n, true
			next, _, _ := strings.Cut(rest, "-")
			minor, _ = smallNumber(next)
		} else if !isNum && tier == "" {
			tier = p
		}
	}
	return tier, major, minor, ok
}

// smallNumber parses a version number of one or two digits.
func smallNumber(s string) (int, bool) {
	if len(s) == 0 || len(s) > 2 {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}
