package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/loadtest"
)

func TestTarget(t *testing.T) {
	t.Parallel()
	body := filepath.Join(t.TempDir(), "body.json")
	require.NoError(t, os.WriteFile(body, []byte(`{"messages":[]}`), 0o600))
	tests := []struct {
		name     string
		args     []string
		wantURL  string
		wantFmt  loadtest.Format
		wantBody string // "" means the scenario's
		noExpect bool
	}{
		{"a base URL gets the scenario's path", []string{"-url", "http://h:1", "-scenario", "stream", "-n", "1"},
			"http://h:1/llm-apps/chat?stream=true&client_type=loadgen", loadtest.FormatJSONL, "", false},
		{"a trailing slash too", []string{"-url", "http://h:1/", "-scenario", "bedrock-stream", "-n", "1"},
			"http://h:1/model/us.anthropic.claude-sonnet-4-20250514-v1%3A0/converse-stream", loadtest.FormatEventStream, "", false},
		{"the OpenAI stream", []string{"-url", "http://h:1", "-scenario", "openai-stream", "-n", "1"},
			"http://h:1/v1/chat/completions", loadtest.FormatSSE, "", false},
		{"the OpenAI unary answer", []string{"-url", "http://h:1", "-scenario", "openai-unary", "-n", "1"},
			"http://h:1/v1/chat/completions", loadtest.FormatOpenAI, "", false},
		{"a body file drops the usage requirement", []string{"-url", "http://h:1", "-scenario", "openai-stream", "-body-file", body, "-n", "1"},
			"http://h:1/v1/chat/completions", loadtest.FormatSSE, `{"messages":[]}`, true},
		{"a URL with a path is used as is", []string{"-url", "http://h:1/other?x=1", "-n", "1"},
			"http://h:1/other?x=1", loadtest.FormatUnary, "", false},
		{"a body file replaces the body and its expectation", []string{"-url", "http://h:1/x", "-body-file", body, "-format", "jsonl", "-duration", "1s"},
			"http://h:1/x", loadtest.FormatJSONL, `{"messages":[]}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o, err := parseFlags(tt.args)
			require.NoError(t, err)
			cfg, full, err := target(o)
			require.NoError(t, err)
			assert.Equal(t, tt.wantURL, full)
			assert.Equal(t, tt.wantURL, cfg.URL)
			assert.Equal(t, tt.wantFmt, cfg.Format)
			if tt.wantBody != "" {
				assert.Equal(t, tt.wantBody, string(cfg.Body))
			}
			assert.Equal(t, tt.noExpect, cfg.Expect == nil)
			// Only the OpenAI stream, with the scenario's own body, must report usage.
			assert.Equal(t, o.scenario == "openai-stream" && o.bodyFile == "", cfg.Usage)
		})
	}
}

func TestFlagErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{},                             // neither -n nor -duration
		{"-n", "1", "-duration", "1s"}, // both
		{"-n", "1", "-header", "no colon"},
		{"-n", "1", "-concurrency", "0"},
		{"-n", "1", "extra"},
		{"-n", "1", "-rate", "-5"},
	} {
		_, err := parseFlags(args)
		assert.Error(t, err, "%q", args)
	}
	o, err := parseFlags([]string{"-n", "1", "-header", "Authorization: Bearer k", "-header", "X-A:b"})
	require.NoError(t, err)
	assert.Equal(t, "Bearer k", o.headers.Get("Authorization"))
	assert.Equal(t, "b", o.headers.Get("X-A"))
	_, _, err = target(options{url: "http://h", scenario: "unary", format: "xml", model: loadtest.DefaultModel})
	assert.Error(t, err)
	cfg, _, err := target(options{url: "http://h", scenario: "unary", format: "sse", model: loadtest.DefaultModel})
	require.NoError(t, err)
	assert.Equal(t, loadtest.FormatSSE, cfg.Format)
}
