package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The test binary runs as the gateway itself when this variable is set, so the test
// below exercises the real process: flags, signal handling and exit code.
func TestMain(m *testing.M) {
	if os.Getenv("GATEWAY_TEST_RUN_MAIN") == "1" {
		os.Args = append([]string{"gateway"}, strings.Fields(os.Getenv("GATEWAY_TEST_ARGS"))...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestSIGTERMDrainsStreams starts the gateway on the simulator with slow deltas, opens a
// stream, sends SIGTERM, and expects: /readyz 503 while draining, the stream finished with
// done, and exit code 0.
func TestSIGTERMDrainsStreams(t *testing.T) {
	cfgFile := filepath.Join(t.TempDir(), "gateway.yaml")
	require.NoError(t, os.WriteFile(cfgFile, []byte("sim_delta_delay: 40ms\ndrain_timeout: 20s\n"), 0o600))
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GATEWAY_TEST_RUN_MAIN=1",
		"GATEWAY_TEST_ARGS=--sim --http-addr 127.0.0.1:0 --grpc-addr 127.0.0.1:0 --config "+cfgFile)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	// The listening address comes from the startup log line.
	logs := bufio.NewScanner(stderr)
	var httpAddr string
	for httpAddr == "" && logs.Scan() {
		var line struct{ Msg, HTTP string }
		if json.Unmarshal(logs.Bytes(), &line) == nil && line.Msg == "gateway listening" {
			httpAddr = line.HTTP
		}
	}
	require.NotEmpty(t, httpAddr, "no 'gateway listening' log line")
	go func() {
		_, _ = io.Copy(io.Discard, stderr) // keep the pipe drained
		exited <- cmd.Wait()
	}()

	body := `{"messages":[{"role":"user","content":"Weather? Use get_weather."}],
		"tools":[{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]}`
	resp, err := http.Post("http://"+httpAddr+"/llm-apps/chat?stream=true", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	lines := bufio.NewReader(resp.Body)
	_, err = lines.ReadString('\n')
	require.NoError(t, err)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.Eventually(t, func() bool {
		r, err := http.Get("http://" + httpAddr + "/readyz")
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
	case err := <-exited:
		assert.NoError(t, err, "exit code 0")
	case <-time.After(20 * time.Second):
		t.Fatal("the gateway did not exit after SIGTERM")
	}
}
