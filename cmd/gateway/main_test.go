package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/bedrocksim"
)

// The test binary runs as the gateway itself when this variable is set, so the tests
// below exercise the real process: flags, environment, logger, signal handling and exit
// code.
func TestMain(m *testing.M) {
	if os.Getenv("GATEWAY_TEST_RUN_MAIN") == "1" {
		os.Args = append([]string{"gateway"}, strings.Fields(os.Getenv("GATEWAY_TEST_ARGS"))...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// process is the gateway running as a process of its own.
type process struct {
	cmd      *exec.Cmd
	httpAddr string
	stderr   bytes.Buffer // every log line, once exited is closed
	exited   chan error
}

// startProcess starts the gateway with args and, beside this process's environment
// without its AWS_, OTEL_ and GATEWAY_ variables, env; and waits for its "gateway
// listening" line.
func startProcess(t *testing.T, args string, env ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(os.Args[0], "-test.run=^$"), exited: make(chan error, 1)}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") && !strings.HasPrefix(kv, "OTEL_") && !strings.HasPrefix(kv, "GATEWAY_") {
			p.cmd.Env = append(p.cmd.Env, kv)
		}
	}
	p.cmd.Env = append(p.cmd.Env, "GATEWAY_TEST_RUN_MAIN=1", "GATEWAY_TEST_ARGS=--http-addr 127.0.0.1:0 --grpc-addr 127.0.0.1:0 "+args)
	p.cmd.Env = append(p.cmd.Env, env...)
	stderr, err := p.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, p.cmd.Start())
	t.Cleanup(func() { _ = p.cmd.Process.Kill() })

	// The listening address comes from the startup log line: its fields are a JSON object,
	// the whole line in the JSON format, its end in the console format.
	logs := bufio.NewScanner(stderr)
	for p.httpAddr == "" && logs.Scan() {
		p.stderr.Write(logs.Bytes())
		p.stderr.WriteByte('\n')
		var fields struct{ HTTP string }
		if l := logs.Bytes(); bytes.Contains(l, []byte("gateway listening")) && bytes.IndexByte(l, '{') >= 0 &&
			json.Unmarshal(l[bytes.IndexByte(l, '{'):], &fields) == nil {
			p.httpAddr = fields.HTTP
		}
	}
	require.NotEmpty(t, p.httpAddr, "no 'gateway listening' log line: %s", p.stderr.String())
	go func() {
		_, _ = io.Copy(&p.stderr, stderr) // keep the pipe drained
		p.exited <- p.cmd.Wait()
	}()
	return p
}

// stop sends SIGTERM, expects exit code 0, and returns the log lines, each decoded.
func (p *process) stop(t *testing.T) []map[string]any {
	t.Helper()
	p.exit(t)
	var lines []map[string]any
	for l := range strings.Lines(p.stderr.String()) {
		var line map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &line), "a log line that is not JSON: %s", l)
		lines = append(lines, line)
	}
	return lines
}

// exit sends SIGTERM and expects exit code 0; p.stderr then holds every log line.
func (p *process) exit(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-p.exited:
		require.NoError(t, err, "exit code 0")
	case <-time.After(20 * time.Second):
		t.Fatal("the gateway did not exit after SIGTERM")
	}
}

// TestLogFormats: the default log format is JSON, one object a line; --log-format console
// writes zap's console lines for people instead (time, level, caller, message, then the
// fields), none of them JSON, without colour escapes; the access line of a failed call
// says why in either, with its latency in milliseconds, and a duration is a duration
// string.
func TestLogFormats(t *testing.T) {
	const unknown = `{"model":"gpt-4o","messages":[{"role":"user","content":"hello"}]}`
	for _, format := range []string{"json", "console"} {
		t.Run(format, func(t *testing.T) {
			args := "--sim"
			if format == "console" {
				args += " --log-format console"
			}
			p := startProcess(t, args)
			resp, err := http.Post("http://"+p.httpAddr+"/llm-apps/chat", "application/json", strings.NewReader(unknown))
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, http.StatusNotFound, resp.StatusCode)
			p.exit(t)

			var access, draining string
			var times []string // each line's time, ISO 8601 to the millisecond, as written
			for l := range strings.Lines(p.stderr.String()) {
				var line map[string]any
				isJSON := json.Unmarshal([]byte(l), &line) == nil
				assert.Equal(t, format == "json", isJSON, "a line in the %s format: %s", format, l)
				if isJSON {
					times = append(times, line["ts"].(string))
				} else {
					times = append(times, strings.SplitN(l, "\t", 2)[0])
				}
				assert.NotContains(t, l, "\x1b[", "no colour escapes")
				switch {
				case strings.Contains(l, resp.Header.Get("X-Request-Id")):
					access = l
				case strings.Contains(l, "draining"):
					draining = l
				}
			}
			// Info lines are written in batches and warnings at once: a warning flushes the
			// lines before it, so the log reads in the order it was written.
			assert.True(t, slices.IsSorted(times), "lines in the order they were logged: %s", p.stderr.String())
			assert.Regexp(t, `"timeout": ?"20s"`, draining, "a duration with its unit")
			require.NotEmpty(t, access, "the access line: %s", p.stderr.String())
			assert.Contains(t, access, `"reason":`)
			assert.Contains(t, access, `model \"gpt-4o\" is neither an alias`)
			assert.Contains(t, access, `"latency_ms":`)
			if format == "console" {
				fields := strings.Split(access, "\t")
				require.GreaterOrEqual(t, len(fields), 4, access)
				assert.Equal(t, "INFO", fields[1])
				assert.Equal(t, "http", fields[2], "the access line has no caller")
				assert.True(t, strings.HasPrefix(fields[3], `{"request_id": "`), access)
			}
		})
	}
}

// TestSIGTERMDrainsStreams starts the gateway on the simulator with slow deltas, opens a
// stream, sends SIGTERM, and expects: /readyz 503 while draining, the stream finished with
// done, and exit code 0.
func TestSIGTERMDrainsStreams(t *testing.T) {
	cfgFile := filepath.Join(t.TempDir(), "gateway.yaml")
	require.NoError(t, os.WriteFile(cfgFile, []byte("sim_delta_delay: 40ms\ndrain_timeout: 20s\n"), 0o600))
	p := startProcess(t, "--sim --config "+cfgFile)

	body := `{"messages":[{"role":"user","content":"Weather? Use get_weather."}],
		"tools":[{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]}`
	resp, err := http.Post("http://"+p.httpAddr+"/llm-apps/chat?stream=true", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	lines := bufio.NewReader(resp.Body)
	_, err = lines.ReadString('\n')
	require.NoError(t, err)

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.Eventually(t, func() bool {
		r, err := http.Get("http://" + p.httpAddr + "/readyz")
		if err != nil {
			return false
		}
		r.Body.Close()
		return r.StatusCode == http.StatusServiceUnavailable
	}, 5*time.Second, 10*time.Millisecond, "/readyz is 503 while draining")

	rest, err := io.ReadAll(lines)
	require.NoError(t, err)
	all := strings.Split(strings.TrimSpace(string(rest)), "\n")
	assert.Contains(t, all[len(all)-1], `"type":"done"`, "the stream in flight finished")

	select {
	case err := <-p.exited:
		assert.NoError(t, err, "exit code 0")
	case <-time.After(20 * time.Second):
		t.Fatal("the gateway did not exit after SIGTERM")
	}
}

// TestAWSCredentialsAtStartup starts the gateway for AWS Bedrock (its endpoint a
// simulator) without --sim: with no AWS credentials anywhere the SDK's chain looks (IMDS
// off, or an IMDS that refuses, as one outside EC2 may), and with credentials in the
// environment. Without: a warning at startup, /readyz 503 naming the missing credentials,
// and a chat answered 503 saying the gateway has no credentials, with Bedrock never
// called; its error line carries no stack trace. With: the startup line names the source,
// "env", /readyz is ready, the chat succeeds, and no log line holds the key id or the
// secret. Every line on stderr is JSON, the SDK's own warnings included.
func TestAWSCredentialsAtStartup(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	const keyID, secret = "AKIDCMDTEST0123456789", "cmd-test-secret-0123456789"
	const chat = `{"messages":[{"role":"user","content":"hello"}]}`
	imds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusForbidden) // the SDK falls back to IMDSv1, and warns
	}))
	t.Cleanup(imds.Close)
	tests := []struct {
		name  string
		creds []string // none: no credentials
		env   []string
	}{
		{"none", nil, []string{"AWS_EC2_METADATA_DISABLED=true"}},
		{"IMDS refuses", nil, []string{"AWS_EC2_METADATA_SERVICE_ENDPOINT=" + imds.URL}},
		{"env", []string{"AWS_ACCESS_KEY_ID=" + keyID, "AWS_SECRET_ACCESS_KEY=" + secret}, []string{"AWS_EC2_METADATA_DISABLED=true"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim := bedrocksim.New(bedrocksim.Options{})
			srv := httptest.NewServer(sim)
			t.Cleanup(func() { sim.Close(); srv.Close() })
			env := []string{"AWS_REGION=us-east-1", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME=" + srv.URL,
				"AWS_CONFIG_FILE=" + empty, "AWS_SHARED_CREDENTIALS_FILE=" + empty}
			p := startProcess(t, "", slices.Concat(env, tt.env, tt.creds)...)

			ready, err := http.Get("http://" + p.httpAddr + "/readyz")
			require.NoError(t, err)
			readyBody, _ := io.ReadAll(ready.Body)
			ready.Body.Close()
			resp, err := http.Post("http://"+p.httpAddr+"/llm-apps/chat", "application/json", strings.NewReader(chat))
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			logs := p.stop(t)

			for _, line := range logs {
				assert.NotContains(t, line, "stacktrace", "only a panic's line has a stack: %v", line)
				assert.NotContains(t, line, "stack", "only a panic's line has a stack: %v", line)
			}
			byMsg := func(prefix string) map[string]any {
				for _, line := range logs {
					if strings.HasPrefix(line["msg"].(string), prefix) {
						return line
					}
				}
				return nil
			}
			if tt.creds == nil {
				assert.Equal(t, http.StatusServiceUnavailable, ready.StatusCode)
				assert.JSONEq(t, `{"status":"not_ready","reason":"the gateway has no AWS credentials; its log says why","upstream":"bedrock","store":"memory"}`, string(readyBody))
				assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, string(body))
				var answer struct{ Error, Code string }
				require.NoError(t, json.Unmarshal(body, &answer))
				assert.Equal(t, "the gateway has no AWS credentials, so Bedrock was not called; the gateway log has the cause under this request id", answer.Error)
				assert.Equal(t, "unavailable", answer.Code)
				assert.Zero(t, sim.Requests(), "Bedrock is not called")

				warning := byMsg("no AWS credentials")
				require.NotNil(t, warning, "a warning at startup")
				assert.Equal(t, "warn", warning["level"])
				assert.Contains(t, warning["error"], "IMDS", "the warning says why")
				failed := byMsg("request failed")
				require.NotNil(t, failed, "the call's cause is logged")
				assert.Equal(t, "error", failed["level"])
				assert.Equal(t, resp.Header.Get("X-Request-Id"), failed["request_id"])
				return
			}
			assert.Equal(t, http.StatusOK, ready.StatusCode)
			assert.JSONEq(t, `{"status":"ready","upstream":"bedrock","store":"memory"}`, string(readyBody))
			assert.Equal(t, http.StatusOK, resp.StatusCode, string(body))
			found := byMsg("AWS credentials found")
			require.NotNil(t, found)
			assert.Equal(t, "env", found["source"])
			assert.Equal(t, "EnvConfigCredentials", found["provider"])
			assert.Nil(t, byMsg("no AWS credentials"))
			assert.NotContains(t, p.stderr.String(), keyID)
			assert.NotContains(t, p.stderr.String(), secret)
		})
	}
}
