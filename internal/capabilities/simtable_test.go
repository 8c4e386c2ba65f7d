package capabilities_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/nirmata/llm-gateway/internal/bedrocksim"
	"github.com/nirmata/llm-gateway/internal/capabilities"
)

// TestSimulatorModelTable holds the gateway's capability table (internal/capabilities) to the
// simulator's (internal/bedrocksim), which is written separately from docs/BEDROCK.md F: for
// every model the simulator knows, in every id form a client may send, each flag both tables
// have must agree. Other tests only fail when the gateway sends what the simulator refuses; a
// gateway more cautious than the model (synthesizing a stream the model could send, hiding a
// toolChoice it accepts) or a flag no test exercises fails here, naming the model and field.
func TestSimulatorModelTable(t *testing.T) {
	t.Parallel()
	// gatewayWrong marks "id field" pairs where the gateway's table is known to disagree with
	// docs/BEDROCK.md F and the simulator follows F; each is logged, not failed, until the
	// gateway's table is fixed. Empty: the two tables agree.
	gatewayWrong := map[string]string{}

	models := bedrocksim.Models()
	if len(models) == 0 {
		t.Fatal("the simulator knows no model")
	}
	for _, sim := range models {
		bare := disagreements(capabilities.Lookup(sim.ID), sim)
		for _, d := range bare {
			if why, ok := gatewayWrong[sim.ID+" "+d.field]; ok {
				t.Logf("%s: %s (known: %s)", sim.ID, d, why)
				continue
			}
			t.Errorf("%s: %s", sim.ID, d)
		}
		// Every other form must read as the bare id does.
		for _, id := range idForms(sim.ID) {
			if got := disagreements(capabilities.Lookup(id), sim); !slices.Equal(got, bare) {
				t.Errorf("%s: the gateway reads it unlike %s: %v", id, sim.ID, got)
			}
		}
	}
}

type disagreement struct{ field, gateway, simulator string }

func (d disagreement) String() string {
	return fmt.Sprintf("%s: gateway %s, simulator %s", d.field, d.gateway, d.simulator)
}

// disagreements compares the flags both tables have.
func disagreements(gw capabilities.Model, sim bedrocksim.ModelInfo) []disagreement {
	var out []disagreement
	for _, f := range []disagreement{
		// A model the simulator serves must be one the gateway knows, not one it guesses about.
		{"Known", fmt.Sprint(gw.Known), "true"},
		{"Tools", fmt.Sprint(gw.Tools), fmt.Sprint(sim.Tools)},
		{"StreamingTools", fmt.Sprint(gw.StreamingTools), fmt.Sprint(sim.StreamingTools)},
		{"ToolChoice", choices(gw.ToolChoice), choices(sim.ToolChoice)},
		{"NoPrefill", fmt.Sprint(gw.NoPrefill), fmt.Sprint(sim.NoPrefill)},
		{"NoTemperatureWithTopP", fmt.Sprint(gw.NoTemperatureWithTopP), fmt.Sprint(sim.NoTemperatureWithTopP)},
		// F.2's columns (docs/BEDROCK.md G and H).
		{"Reasoning", gw.Reasoning, reasoningForms[sim.Reasoning]},
		{"MaxEffort", gw.MaxEffort, sim.MaxEffort},
		{"CacheMinTokens", fmt.Sprint(gw.CacheMinTokens), fmt.Sprint(sim.CacheMinTokens)},
		{"Cache1h", fmt.Sprint(gw.Cache1h), fmt.Sprint(sim.Cache1h)},
		{"NoToolCachePoint", fmt.Sprint(gw.NoToolCachePoint), fmt.Sprint(sim.NoToolCachePoint)},
		// F.2's structured-output column (docs/BEDROCK.md I6): outputConfig.textFormat and
		// toolSpec.strict, one flag in both tables.
		{"StructuredOutput", fmt.Sprint(gw.StructuredOutput), fmt.Sprint(sim.StructuredOutput)},
	} {
		if f.gateway != f.simulator {
			out = append(out, f)
		}
	}
	return out
}

// reasoningForms maps the simulator's reasoning forms to the gateway's: the gateway has one
// form for Nova 2's reasoningConfig and DeepSeek's reasoning_config, which the simulator,
// checking their shapes, tells apart.
var reasoningForms = map[string]string{
	"":                               "",
	bedrocksim.ReasoningBudget:       capabilities.ReasoningBudget,
	bedrocksim.ReasoningAdaptive:     capabilities.ReasoningAdaptive,
	bedrocksim.ReasoningAdaptiveOnly: capabilities.ReasoningAdaptiveOnly,
	bedrocksim.ReasoningNova:         capabilities.ReasoningConfig,
	bedrocksim.ReasoningDeepSeek:     capabilities.ReasoningConfig,
	bedrocksim.ReasoningEffort:       capabilities.ReasoningEffort,
}

// idForms are the other ways a client may name a foundation model: behind each cross-region
// prefix, and in the two ARN forms.
func idForms(id string) []string {
	forms := []string{
		"arn:aws:bedrock:us-east-1::foundation-model/" + id,
		"arn:aws:bedrock:us-east-1:123456789012:inference-profile/us." + id,
	}
	for _, p := range []string{"us.", "eu.", "apac.", "global.", "us-gov.", "jp.", "au.", "ca."} {
		forms = append(forms, p+id)
	}
	return forms
}

// choices renders toolChoice kinds as a set: order does not matter, and none is "".
func choices(kinds []string) string {
	return strings.Join(slices.Sorted(slices.Values(kinds)), ",")
}
