package capabilities

import (
	"slices"
	"strings"
)

// Geographies of Claude's cross-region inference profiles: the prefix of a profile id.
const (
	geoUS = 1 << iota
	geoEU
	geoAPAC
	geoJP
	geoGlobal
)

// AnthropicName is one row of the table of Anthropic's API model names: the names a client
// of Anthropic's Messages API sends, the Bedrock foundation model they stand for, and the
// geographies with a cross-region inference profile of it.
type AnthropicName struct {
	// Names are Anthropic's names of the model: the short alias first, then the dated id.
	Names []string
	// ID is the Bedrock foundation-model id.
	ID string
	// Profiles are the inference-profile prefixes Bedrock offers for the model, of "us",
	// "eu", "apac", "jp" and "global".
	Profiles []string
}

// anthropicNames is the table: Anthropic's names and Bedrock's ids from Anthropic's page
// of Claude on Bedrock (InvokeModel and Converse) and AWS's list of inference profiles. The
// models from Claude 3.7 on are served through inference profiles only: a call naming the
// foundation id is refused ("Invocation of model ID … with on-demand throughput isn't
// supported"). Claude Code 2.1's default models are the 5.5 generation (claude-opus-5-5, its
// sonnet and haiku choices claude-sonnet-5-5 and claude-haiku-5-5); their profiles, like
// Opus 4.7's, are taken to be those of the 4.6 models in the US and the EU and the global one,
// which every Claude model since Sonnet 4.5 has.
var anthropicNames = []struct {
	names []string
	id    string
	geos  int
}{
	{[]string{"claude-opus-5-5"}, "anthropic.claude-opus-5-5", geoUS | geoEU | geoGlobal},
	{[]string{"claude-sonnet-5-5"}, "anthropic.claude-sonnet-5-5", geoUS | geoEU | geoGlobal},
	{[]string{"claude-haiku-5-5"}, "anthropic.claude-haiku-5-5", geoUS | geoEU | geoGlobal},
	{[]string{"claude-opus-4-7"}, "anthropic.claude-opus-4-7", geoUS | geoEU | geoGlobal},
	{[]string{"claude-opus-4-6"}, "anthropic.claude-opus-4-6-v1", geoUS | geoEU | geoAPAC | geoJP | geoGlobal},
	{[]string{"claude-sonnet-4-6"}, "anthropic.claude-sonnet-4-6", geoUS | geoEU | geoJP | geoGlobal},
	{[]string{"claude-sonnet-4-5", "claude-sonnet-4-5-20250929"}, "anthropic.claude-sonnet-4-5-20250929-v1:0", geoUS | geoEU | geoJP | geoGlobal},
	{[]string{"claude-haiku-4-5", "claude-haiku-4-5-20251001"}, "anthropic.claude-haiku-4-5-20251001-v1:0", geoUS | geoEU | geoAPAC | geoJP | geoGlobal},
	{[]string{"claude-opus-4-5", "claude-opus-4-5-20251101"}, "anthropic.claude-opus-4-5-20251101-v1:0", geoUS | geoEU | geoGlobal},
	{[]string{"claude-opus-4-1", "claude-opus-4-1-20250805"}, "anthropic.claude-opus-4-1-20250805-v1:0", geoUS | geoEU | geoAPAC},
	{[]string{"claude-opus-4-0", "claude-opus-4-20250514"}, "anthropic.claude-opus-4-20250514-v1:0", geoUS},
	{[]string{"claude-sonnet-4-0", "claude-sonnet-4-20250514"}, "anthropic.claude-sonnet-4-20250514-v1:0", geoUS | geoEU | geoAPAC | geoGlobal},
	{[]string{"claude-3-7-sonnet-latest", "claude-3-7-sonnet-20250219"}, "anthropic.claude-3-7-sonnet-20250219-v1:0", geoUS | geoEU | geoAPAC},
	{[]string{"claude-3-5-haiku-latest", "claude-3-5-haiku-20241022"}, "anthropic.claude-3-5-haiku-20241022-v1:0", geoUS},
	{[]string{"claude-3-5-sonnet-latest", "claude-3-5-sonnet-20241022"}, "anthropic.claude-3-5-sonnet-20241022-v2:0", geoUS | geoAPAC},
	{[]string{"claude-3-5-sonnet-20240620"}, "anthropic.claude-3-5-sonnet-20240620-v1:0", geoUS | geoEU | geoAPAC},
	{[]string{"claude-3-opus-latest", "claude-3-opus-20240229"}, "anthropic.claude-3-opus-20240229-v1:0", geoUS},
	{[]string{"claude-3-haiku-20240307"}, "anthropic.claude-3-haiku-20240307-v1:0", geoUS | geoEU | geoAPAC},
}

// geoNames are the geographies' prefixes, in the order of the bits.
var geoNames = []string{"us", "eu", "apac", "jp", "global"}

// regionGeo is the geography whose profiles a call from an AWS region takes: us-* the US
// (GovCloud has profiles of its own, which the table does not hold), eu-* Europe, Tokyo and
// Osaka Japan, the other ap-* Asia Pacific; other regions (Canada, South America, the
// Middle East, …) none, so the global profile, else the foundation id.
func regionGeo(region string) int {
	switch {
	case strings.HasPrefix(region, "us-gov-"):
		return 0
	case strings.HasPrefix(region, "us-"):
		return geoUS
	case strings.HasPrefix(region, "eu-"):
		return geoEU
	case region == "ap-northeast-1" || region == "ap-northeast-3":
		return geoJP
	case strings.HasPrefix(region, "ap-"):
		return geoAPAC
	}
	return 0
}

// profileFor is the model id a call from region sends for a model of foundation id and
// profiles geos: the profile of the region's geography (Japan's, else Asia Pacific's, in
// Japan), else the global profile, else the foundation id.
func profileFor(id string, geos int, region string) string {
	geo := regionGeo(region)
	if geo == geoJP && geos&geoJP == 0 {
		geo = geoAPAC
	}
	for i, name := range geoNames {
		bit := 1 << i
		if bit == geo && geos&bit != 0 {
			return name + "." + id
		}
	}
	if geos&geoGlobal != 0 {
		return "global." + id
	}
	return id
}

// AnthropicModel is the Bedrock model id an Anthropic API model name stands for in the
// gateway's region: its inference profile there (profileFor), else the foundation id; ok
// is false for a name outside the table.
func AnthropicModel(name, region string) (id string, ok bool) {
	for _, m := range anthropicNames {
		for _, n := range m.names {
			if n == name {
				return profileFor(m.id, m.geos, region), true
			}
		}
	}
	return "", false
}

// AnthropicModels maps every name of the table to its model id in region (AnthropicModel),
// built once so that resolving a request's model costs a map look-up.
func AnthropicModels(region string) map[string]string {
	out := map[string]string{}
	for _, m := range anthropicNames {
		for _, n := range m.names {
			out[n] = profileFor(m.id, m.geos, region)
		}
	}
	return out
}

// AnthropicNames is the table, for the documentation.
func AnthropicNames() []AnthropicName {
	out := make([]AnthropicName, 0, len(anthropicNames))
	for _, m := range anthropicNames {
		row := AnthropicName{Names: slices.Clone(m.names), ID: m.id}
		for i, name := range geoNames {
			if m.geos&(1<<i) != 0 {
				row.Profiles = append(row.Profiles, name)
			}
		}
		out = append(out, row)
	}
	return out
}
