package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestCommandLine: help, version and usage errors, each printed once, with exit codes a
// script can rely on.
func TestCommandLine(t *testing.T) {
	tests := []struct {
		args           string
		code           int
		stdout, stderr string // substrings; "" means empty
	}{
		{"--help", 0, "gateway sim [flags]", ""},
		{"-h", 0, "-default-model string", ""},
		{"help", 0, "gateway version", ""},
		{"help sim", 0, "kinds: throttle, unavailable", ""},
		{"sim --help", 0, "Fault syntax", ""},
		{"--version", 0, "gateway ", ""},
		{"version", 0, "gateway ", ""},
		{"sim --fault bogus", 2, "", `unknown fault kind "bogus"; want one of throttle, unavailable, internal, model_not_ready, hang, stream_exception, truncate`},
		{"sim --fault throttle,bogus=1", 2, "", "unknown option; want times, mode, exception, after, model or region"},
		{"--no-such-flag", 2, "", "Run 'gateway --help' for usage."},
		{"--max-tools 0", 2, "", "gateway: max_tools: must be at least 1, got 0 (from --max-tools)\nRun 'gateway --help' for usage.\n"},
		{"--help", 0, "Simulator settings", ""},
		{"frobnicate", 2, "", `unknown command "frobnicate"`},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), strings.Fields(tt.args), &stdout, &stderr)
			assert.Equal(t, tt.code, code)
			if tt.stdout == "" {
				assert.Empty(t, stdout.String())
			} else {
				assert.Contains(t, stdout.String(), tt.stdout)
			}
			if tt.stderr == "" {
				assert.Empty(t, stderr.String())
			} else {
				assert.Contains(t, stderr.String(), tt.stderr)
				assert.Equal(t, 1, strings.Count(stderr.String(), "gateway:"), "the error is printed once: %s", stderr.String())
			}
		})
	}
}
