package capabilities

// betas are the anthropic-beta values the gateway forwards to Bedrock, in
// additionalModelRequestFields.anthropic_beta, and the Claude models that take each (AWS's
// page of Claude's Messages request parameters on Bedrock). A value that works only with a
// field or a tool the gateway does not send (computer use, context management, tool
// search, effort on Opus 4.5), one that needs access AWS grants per account
// (dev-full-thinking), and every value on the models not named here are dropped
// (docs/BEDROCK.md G12, docs/PROTOCOL.md 15).
var betas = []struct {
	name  string
	takes func(tier string, v int) bool
}{
	// Thinking between tool calls: Claude 4 to 4.5, whose thinking takes a budget (adaptive
	// thinking, from 4.6, interleaves by itself).
	{"interleaved-thinking-2025-05-14", func(_ string, v int) bool { return v >= 40 && v <= 45 }},
	// The 1M-token context window: Claude Sonnet 4 and 4.5.
	{"context-1m-2025-08-07", func(tier string, v int) bool { return tier == "sonnet" && (v == 40 || v == 45) }},
	// Claude 3.7 Sonnet's token-efficient tool use and 128K output (later models have both
	// without a beta).
	{"token-efficient-tools-2025-02-19", func(tier string, v int) bool { return tier == "sonnet" && v == 37 }},
	{"output-128k-2025-02-19", func(tier string, v int) bool { return tier == "sonnet" && v == 37 }},
}

// TakesBeta reports whether the gateway forwards the anthropic-beta value beta to the
// model: only Claude models take any.
func TakesBeta(m Model, beta string) bool {
	tier, major, minor, ok := claudeVersion(m.Family)
	if !ok {
		return false
	}
	for _, b := range betas {
		if b.name == beta {
			return b.takes(tier, major*10+minor)
		}
	}
	return false
}

// Betas lists the anthropic-beta values the gateway forwards to the model, in the table's
// order; none for a model that is not Claude.
func Betas(m Model) []string {
	var out []string
	for _, b := range betas {
		if TakesBeta(m, b.name) {
			out = append(out, b.name)
		}
	}
	return out
}
