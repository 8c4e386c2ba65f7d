package chartcheck

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
)

// TestGatewayServesThePod starts the gateway of this checkout as the chart's pod would: its
// arguments, its environment and nothing else, its configuration and keys files laid out
// from the ConfigMap and the Secret, as uid 65532 when the test runs as root. It must
// answer the probes' paths and the ServiceMonitor's on the http port, and exit 0 on SIGTERM
// within the grace period. On the simulator (the pod's own values turn it on): no AWS here.
// What this cannot show: the image, the read-only root filesystem, the kubelet's probes.
func TestGatewayServesThePod(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the gateway")
	}
	t.Parallel()
	r, err := Render(chartDir, release, namespace, kube, values(t, "keys.yaml"))
	require.NoError(t, err)
	pod := Of[appsv1.Deployment](r, "apps/v1/Deployment")[0].Spec.Template.Spec
	c := pod.Containers[0]

	dir := t.TempDir()
	bin := filepath.Join(dir, "gateway")
	// A plain build: after `make lint` (go vet) every package but main is in the build cache.
	build := exec.Command("go", "build", "-o", bin, "./cmd/gateway")
	build.Dir = "../../.."
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	args, env := materialize(t, r, dir)
	// Loopback and free ports, so the test runs beside anything on 8080 and 9090; later
	// flags beat the pod's.
	args = append(args, "--http-addr=127.0.0.1:0", "--grpc-addr=127.0.0.1:0")
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	if os.Getuid() == 0 {
		// t.TempDir's parent is 0700: let the pod's user through to its files.
		require.NoError(t, os.Chmod(filepath.Dir(dir), 0o755))
		require.NoError(t, os.Chmod(dir, 0o755))
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65532, Gid: 65532}}
	}
	logs, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = cmd.Stdout // the gateway logs on stderr
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})

	// The gateway logs where it listens.
	listening := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(logs)
		for sc.Scan() {
			t.Log(sc.Text())
			var line struct{ Msg, HTTP string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "gateway listening" {
				listening <- line.HTTP
			}
		}
		exited <- cmd.Wait()
	}()
	var addr string
	select {
	case addr = <-listening:
	case err := <-exited:
		exited <- err
		t.Fatalf("the gateway exited before listening: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the gateway did not say where it listens within 30 s")
	}

	if cmd.SysProcAttr != nil {
		status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid), "status"))
		require.NoError(t, err)
		require.Regexp(t, `(?m)^Uid:\s+65532\s`, string(status))
	}

	get := func(path string) int {
		t.Helper()
		resp, err := http.Get("http://" + addr + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	require.Equal(t, http.StatusOK, get(c.ReadinessProbe.HTTPGet.Path))
	require.Equal(t, http.StatusOK, get(c.LivenessProbe.HTTPGet.Path))
	require.Equal(t, http.StatusOK, get("/metrics"))
	// The keys file was read: chat needs a key.
	resp, err := http.Post("http://"+addr+"/llm-apps/chat", "application/json", strings.NewReader(`{"messages":[{"role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	start := time.Now()
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	grace := time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second
	select {
	case err := <-exited:
		exited <- err
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("the gateway exited with %v on SIGTERM, want 0", err)
		}
		require.NoError(t, err)
		t.Logf("exited %v after SIGTERM (grace period %v)", time.Since(start).Round(time.Millisecond), grace)
	case <-time.After(grace):
		t.Fatalf("the gateway still runs %v after SIGTERM: the kubelet would kill it", grace)
	}
}
