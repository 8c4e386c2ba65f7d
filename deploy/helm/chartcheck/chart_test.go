package chartcheck

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/nirmata/llm-gateway/internal/config"
)

const (
	chartDir  = "../llm-gateway"
	release   = "gw"
	namespace = "llm"
	// minKube is Chart.yaml's kubeVersion; kube is the version of k8s.io/api.
	minKube = "v1.23.0"
	kube    = "v1.37.0"
	// shutdownTimeout is what the gateway takes after the drain to close its servers
	// (internal/gateway).
	shutdownTimeout = 5 * time.Second
)

// want is what a set of values must render.
type want struct {
	hpa            bool
	replicas       int32 // without hpa
	drain          time.Duration
	grace          int64 // terminationGracePeriodSeconds
	preStop        int64 // the preStop sleep, seconds; 0: none
	keys           string
	redis          string // GATEWAY_REDIS_URL: "" unset, "value", or "secret"
	serviceMonitor bool
	roleArn        string
	automount      bool // the Kubernetes API token
	region         string
	sim            bool
	httpPort       int32 // the Service's
	grpcPort       int32
}

// Keys: no key (authentication off), the release's own Secret, or a Secret of the user's.
const (
	noKeys  = ""
	ownKeys = "own"
)

var cases = []struct {
	name   string
	values string // a file of testdata; "": the chart's defaults
	kube   string
	want   want
}{
	{"defaults at the lowest Kubernetes", "", minKube, want{hpa: true, drain: 20 * time.Second, grace: 30, region: "us-east-1", automount: true, httpPort: 8080, grpcPort: 9090}},
	{"defaults", "", kube, want{hpa: true, drain: 20 * time.Second, grace: 30, region: "us-east-1", automount: true, httpPort: 8080, grpcPort: 9090}},
	{"own keys, no HPA, simulator", "keys.yaml", kube, want{replicas: 3, drain: 45 * time.Second, grace: 55, keys: ownKeys,
		redis: "value", region: "us-east-1", sim: true, automount: true, httpPort: 8080, grpcPort: 9090}},
	{"everything on", "everything.yaml", "v1.30.0", want{hpa: true, drain: 20 * time.Second, grace: 35, preStop: 5, keys: "gateway-keys",
		redis: "secret", serviceMonitor: true, roleArn: "arn:aws:iam::123456789012:role/llm-gateway", region: "eu-west-1", httpPort: 80, grpcPort: 443}},
}

func values(t *testing.T, file string) map[string]any {
	t.Helper()
	if file == "" {
		return map[string]any{}
	}
	v, err := chartutil.ReadValuesFile(filepath.Join("testdata", file))
	require.NoError(t, err)
	return v
}

func TestLint(t *testing.T) {
	t.Parallel()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			require.NoError(t, Lint(chartDir, namespace, c.kube, values(t, c.values)))
		})
	}
}

// TestRender decodes every manifest strictly (Render), then checks what each must say, and
// that the gateway's own configuration loader accepts the pod's arguments, environment,
// configuration file and keys file.
func TestRender(t *testing.T) {
	t.Parallel()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r, err := Render(chartDir, release, namespace, c.kube, values(t, c.values))
			require.NoError(t, err)
			checkObjects(t, r, c.want)

			dir := t.TempDir()
			args, env := materialize(t, r, dir)
			cfg, err := config.Load(args, func(k string) string { return env[k] })
			require.NoError(t, err, "the gateway refuses the pod's arguments, environment or configuration file")
			require.Equal(t, ":8080", cfg.HTTPAddr)
			require.Equal(t, ":9090", cfg.GRPCAddr)
			require.Equal(t, c.want.drain, cfg.DrainTimeout)
			require.Equal(t, c.want.sim, cfg.Sim.Enabled)
			require.Equal(t, filepath.Join(dir, "etc/llm-gateway/config/gateway.yaml"), cfg.File)
			// The pod is killed only after the preStop sleep, the drain and the close of the
			// servers: calls in flight end with their answer or a 503, never a cut.
			need := time.Duration(c.want.preStop)*time.Second + cfg.DrainTimeout + shutdownTimeout
			require.Greater(t, time.Duration(c.want.grace)*time.Second, need)
			require.Equal(t, c.want.keys != noKeys, len(cfg.FileKeys) > 0)
			// Mounted as the kubelet would (the Secret 0440, through symlinks), no file the
			// gateway reads is exposed.
			require.Empty(t, cfg.Warnings)
		})
	}
}

func checkObjects(t *testing.T, r Rendered, w want) {
	t.Helper()
	deps := Of[appsv1.Deployment](r, "apps/v1/Deployment")
	svcs := Of[corev1.Service](r, "v1/Service")
	cms := Of[corev1.ConfigMap](r, "v1/ConfigMap")
	sas := Of[corev1.ServiceAccount](r, "v1/ServiceAccount")
	secrets := Of[corev1.Secret](r, "v1/Secret")
	hpas := Of[autoscalingv2.HorizontalPodAutoscaler](r, "autoscaling/v2/HorizontalPodAutoscaler")
	pdbs := Of[policyv1.PodDisruptionBudget](r, "policy/v1/PodDisruptionBudget")
	sms := Of[ServiceMonitor](r, "monitoring.coreos.com/v1/ServiceMonitor")
	count := func(b bool) int {
		if b {
			return 1
		}
		return 0
	}
	require.Len(t, deps, 1)
	require.Len(t, svcs, 1)
	require.Len(t, cms, 1)
	require.Len(t, sas, 1)
	require.Len(t, secrets, count(w.keys == ownKeys))
	require.Len(t, hpas, count(w.hpa))
	require.Len(t, pdbs, 1)
	require.Len(t, sms, count(w.serviceMonitor))
	require.Len(t, r.Objects, 5+len(secrets)+len(hpas)+len(sms))
	for _, o := range r.Objects {
		require.Empty(t, o.Meta.Namespace, "%s: the release's namespace is the one helm installs into", o.Source)
	}

	d, svc, cm, sa := deps[0], svcs[0], cms[0], sas[0]
	pod := d.Spec.Template
	podLabels := labels.Set(pod.Labels)
	selects := func(sel *metav1.LabelSelector, what string) {
		t.Helper()
		s, err := metav1.LabelSelectorAsSelector(sel)
		require.NoError(t, err)
		require.False(t, s.Empty(), "%s selects everything", what)
		require.True(t, s.Matches(podLabels), "%s does not select the gateway's pods", what)
	}
	selects(d.Spec.Selector, "the Deployment")
	if w.hpa {
		require.Nil(t, d.Spec.Replicas, "with an HPA, the Deployment must leave replicas to it")
	} else {
		require.NotNil(t, d.Spec.Replicas)
		require.Equal(t, w.replicas, *d.Spec.Replicas)
	}
	require.Equal(t, appsv1.RollingUpdateDeploymentStrategyType, d.Spec.Strategy.Type)
	require.Equal(t, intstr.FromInt32(0), *d.Spec.Strategy.RollingUpdate.MaxUnavailable)

	// Non-root, nothing writable, no capabilities, the runtime's seccomp profile.
	ps := pod.Spec.SecurityContext
	require.NotNil(t, ps)
	require.Equal(t, new(true), ps.RunAsNonRoot)
	require.NotNil(t, ps.RunAsUser)
	require.NotZero(t, *ps.RunAsUser)
	require.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, ps.SeccompProfile.Type)
	require.Empty(t, pod.Spec.InitContainers)
	require.Len(t, pod.Spec.Containers, 1)
	c := pod.Spec.Containers[0]
	sc := c.SecurityContext
	require.NotNil(t, sc)
	require.Equal(t, new(true), sc.ReadOnlyRootFilesystem)
	require.Equal(t, new(false), sc.AllowPrivilegeEscalation)
	require.NotEqual(t, new(true), sc.Privileged)
	require.Contains(t, sc.Capabilities.Drop, corev1.Capability("ALL"))
	require.Empty(t, sc.Capabilities.Add)
	require.Equal(t, &w.automount, pod.Spec.AutomountServiceAccountToken)
	require.Equal(t, &w.automount, sa.AutomountServiceAccountToken)

	// The listeners the arguments open are the container's ports, which the probes, the
	// Service and the ServiceMonitor name.
	containerPort := map[string]int32{}
	for _, p := range c.Ports {
		require.Empty(t, validation.IsValidPortName(p.Name))
		containerPort[p.Name] = p.ContainerPort
	}
	require.Equal(t, map[string]int32{"http": 8080, "grpc": 9090}, containerPort)
	require.Contains(t, c.Args, "--http-addr=:8080")
	require.Contains(t, c.Args, "--grpc-addr=:9090")
	probe := func(p *corev1.Probe, path string) {
		t.Helper()
		require.NotNil(t, p)
		require.NotNil(t, p.HTTPGet)
		require.Equal(t, path, p.HTTPGet.Path)
		require.Equal(t, intstr.FromString("http"), p.HTTPGet.Port)
		require.Less(t, p.TimeoutSeconds, p.PeriodSeconds)
	}
	probe(c.ReadinessProbe, "/readyz")
	probe(c.LivenessProbe, "/healthz")

	// The drain, and the grace period above it.
	require.Contains(t, c.Args, fmt.Sprintf("--drain-timeout=%ds", int(w.drain.Seconds())))
	require.Equal(t, &w.grace, pod.Spec.TerminationGracePeriodSeconds)
	if w.preStop > 0 {
		require.Equal(t, w.preStop, c.Lifecycle.PreStop.Sleep.Seconds)
	} else {
		require.Nil(t, c.Lifecycle)
	}

	// The configuration file and the keys file come from the ConfigMap and the Secret, and a
	// change of either rolls the pods (TestChecksums).
	require.Contains(t, c.Args, "--config=/etc/llm-gateway/config/gateway.yaml")
	require.Regexp(t, "^[0-9a-f]{64}$", pod.Annotations["checksum/config"])
	require.Contains(t, cm.Data, "gateway.yaml")
	vol := func(name string) corev1.Volume {
		t.Helper()
		i := slices.IndexFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == name })
		require.GreaterOrEqual(t, i, 0, "no volume %s", name)
		return pod.Spec.Volumes[i]
	}
	require.Equal(t, cm.Name, vol("config").ConfigMap.Name)
	switch w.keys {
	case noKeys:
		require.False(t, slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--api-keys-file") }))
		require.NotContains(t, pod.Annotations, "checksum/keys")
		require.Contains(t, r.Notes, "authentication is OFF")
	case ownKeys:
		require.Contains(t, c.Args, "--api-keys-file=/etc/llm-gateway/keys/keys")
		require.Equal(t, secrets[0].Name, vol("keys").Secret.SecretName)
		require.Contains(t, secrets[0].Data, "keys")
		require.Regexp(t, "^[0-9a-f]{64}$", pod.Annotations["checksum/keys"])
		require.NotContains(t, r.Notes, "authentication is OFF")
	default:
		require.Contains(t, c.Args, "--api-keys-file=/etc/llm-gateway/keys/keys")
		require.Equal(t, w.keys, vol("keys").Secret.SecretName)
		require.NotContains(t, r.Notes, "authentication is OFF")
	}
	if w.keys != noKeys {
		// Readable by the gateway's group only.
		require.Equal(t, new(int32(0o440)), vol("keys").Secret.DefaultMode)
	}
	for _, m := range c.VolumeMounts {
		require.True(t, m.ReadOnly, "volume %s is mounted writable", m.Name)
	}

	// IRSA, and the AWS region.
	require.Equal(t, sa.Name, pod.Spec.ServiceAccountName)
	if w.roleArn != "" {
		require.Equal(t, w.roleArn, sa.Annotations["eks.amazonaws.com/role-arn"])
	} else {
		require.NotContains(t, sa.Annotations, "eks.amazonaws.com/role-arn")
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		require.Empty(t, validation.IsEnvVarName(e.Name), e.Name)
		require.NotContains(t, env, e.Name, "%s set twice", e.Name)
		env[e.Name] = e
	}
	require.Equal(t, w.region, env["AWS_REGION"].Value)
	redis, ok := env["GATEWAY_REDIS_URL"]
	switch w.redis {
	case "":
		require.False(t, ok, "GATEWAY_REDIS_URL set with no Redis configured")
	case "value":
		require.Regexp(t, "^rediss?://", redis.Value)
	case "secret":
		require.Empty(t, redis.Value)
		require.NotNil(t, redis.ValueFrom.SecretKeyRef)
		require.NotEmpty(t, redis.ValueFrom.SecretKeyRef.Name)
		require.NotEmpty(t, redis.ValueFrom.SecretKeyRef.Key)
	}
	require.True(t, c.Resources.Requests.Cpu().Sign() > 0, "the HPA's target is a share of the CPU request")
	require.False(t, c.Resources.Limits.Memory().IsZero())

	// The Service: http and grpc on the container's ports, grpc marked as such.
	require.NotEmpty(t, svc.Spec.Selector)
	require.True(t, labels.SelectorFromSet(svc.Spec.Selector).Matches(podLabels), "the Service does not select the gateway's pods")
	svcPorts := map[string]corev1.ServicePort{}
	for _, p := range svc.Spec.Ports {
		require.Equal(t, intstr.FromString(p.Name), p.TargetPort)
		require.Contains(t, containerPort, p.TargetPort.StrVal)
		svcPorts[p.Name] = p
	}
	require.Len(t, svcPorts, 2)
	require.Equal(t, w.httpPort, svcPorts["http"].Port)
	require.Equal(t, w.grpcPort, svcPorts["grpc"].Port)
	require.Equal(t, new("grpc"), svcPorts["grpc"].AppProtocol)

	if w.hpa {
		h := hpas[0]
		require.Equal(t, autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name}, h.Spec.ScaleTargetRef)
		require.NotNil(t, h.Spec.MinReplicas)
		require.LessOrEqual(t, *h.Spec.MinReplicas, h.Spec.MaxReplicas)
		require.Len(t, h.Spec.Metrics, 1)
		require.Equal(t, corev1.ResourceCPU, h.Spec.Metrics[0].Resource.Name)
	}
	p := pdbs[0]
	selects(p.Spec.Selector, "the PodDisruptionBudget")
	require.True(t, (p.Spec.MinAvailable == nil) != (p.Spec.MaxUnavailable == nil), "a PDB sets minAvailable or maxUnavailable, not both")

	if w.serviceMonitor {
		sm := sms[0]
		s, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
		require.NoError(t, err)
		require.True(t, s.Matches(labels.Set(svc.Labels)), "the ServiceMonitor does not select the Service")
		require.Equal(t, []string{namespace}, sm.Spec.NamespaceSelector.MatchNames)
		require.Len(t, sm.Spec.Endpoints, 1)
		e := sm.Spec.Endpoints[0]
		require.Contains(t, svcPorts, e.Port)
		require.Equal(t, "http", e.Port)
		require.Equal(t, "/metrics", e.Path)
		interval, err := time.ParseDuration(e.Interval)
		require.NoError(t, err)
		timeout, err := time.ParseDuration(e.ScrapeTimeout)
		require.NoError(t, err)
		require.LessOrEqual(t, timeout, interval)
	}
}

// materialize lays the pod's ConfigMap and Secret volumes out under dir as the kubelet would
// under /: each file in a timestamped directory with the volume's mode, reached through the
// symlinks name -> ..data/name and ..data -> that directory, and, when the test runs as root,
// owned by the pod's fsGroup. It returns the container's arguments with their paths moved
// under dir, and its environment. Values from Secrets the chart does not render are
// placeholders (plaintext keys, as the gateway cannot tell).
func materialize(t *testing.T, r Rendered, dir string) ([]string, map[string]string) {
	t.Helper()
	pod := Of[appsv1.Deployment](r, "apps/v1/Deployment")[0].Spec.Template.Spec
	c := pod.Containers[0]
	args := slices.Clone(c.Args)
	for _, m := range c.VolumeMounts {
		i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
		require.GreaterOrEqual(t, i, 0, "mount of an undeclared volume %s", m.Name)
		v := pod.Volumes[i]
		files := map[string]string{}
		mode := int32(0o644) // the kubelet's default mode
		switch {
		case v.ConfigMap != nil:
			if v.ConfigMap.DefaultMode != nil {
				mode = *v.ConfigMap.DefaultMode
			}
			j := slices.IndexFunc(Of[corev1.ConfigMap](r, "v1/ConfigMap"), func(cm *corev1.ConfigMap) bool { return cm.Name == v.ConfigMap.Name })
			require.GreaterOrEqual(t, j, 0, "volume %s names ConfigMap %s, which the chart does not render", v.Name, v.ConfigMap.Name)
			cm := Of[corev1.ConfigMap](r, "v1/ConfigMap")[j]
			for _, item := range v.ConfigMap.Items {
				require.Contains(t, cm.Data, item.Key)
				files[item.Path] = cm.Data[item.Key]
			}
		case v.Secret != nil:
			if v.Secret.DefaultMode != nil {
				mode = *v.Secret.DefaultMode
			}
			secrets := Of[corev1.Secret](r, "v1/Secret")
			j := slices.IndexFunc(secrets, func(s *corev1.Secret) bool { return s.Name == v.Secret.SecretName })
			for _, item := range v.Secret.Items {
				if j < 0 { // the user's own Secret
					files[item.Path] = "placeholder-key-from-" + v.Secret.SecretName + "\n" // 16 characters or more
					continue
				}
				require.Contains(t, secrets[j].Data, item.Key)
				files[item.Path] = string(secrets[j].Data[item.Key])
			}
		default:
			t.Fatalf("volume %s: only ConfigMap and Secret volumes are expected", v.Name)
		}
		require.NotEmpty(t, files, "volume %s: list its items, so file names do not depend on entry names", v.Name)
		mount := filepath.Join(dir, m.MountPath)
		stamp := "..2026_03_02_10_20_05.000000001"
		require.NoError(t, os.MkdirAll(filepath.Join(mount, stamp), 0o755))
		require.NoError(t, os.Symlink(stamp, filepath.Join(mount, "..data")))
		for path, data := range files {
			require.NotContains(t, path, "/", "volume %s: items in subdirectories are not laid out here", v.Name)
			name := filepath.Join(mount, stamp, path)
			require.NoError(t, os.WriteFile(name, []byte(data), 0o600))
			require.NoError(t, os.Chmod(name, os.FileMode(mode)))
			if fsGroup := pod.SecurityContext.FSGroup; fsGroup != nil && os.Getuid() == 0 {
				require.NoError(t, os.Chown(name, 0, int(*fsGroup)))
			}
			require.NoError(t, os.Symlink(filepath.Join("..data", path), filepath.Join(mount, path)))
		}
		for i, a := range args {
			if flag, path, ok := strings.Cut(a, "="); ok && strings.HasPrefix(path, m.MountPath+"/") {
				args[i] = flag + "=" + filepath.Join(dir, path)
			}
		}
	}
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.Name == "GATEWAY_REDIS_URL":
			env[e.Name] = "redis://placeholder-from-secret:6379"
		default:
			env[e.Name] = "placeholder-from-secret"
		}
	}
	return args, env
}

// TestChecksums: the pods roll when the configuration or the keys change, and only then.
func TestChecksums(t *testing.T) {
	t.Parallel()
	annotations := func(vals map[string]any) map[string]string {
		t.Helper()
		r, err := Render(chartDir, release, namespace, kube, vals)
		require.NoError(t, err)
		return Of[appsv1.Deployment](r, "apps/v1/Deployment")[0].Spec.Template.Annotations
	}
	withKeys := func(extra map[string]any, keys ...any) map[string]any {
		v := map[string]any{"apiKeys": map[string]any{"keys": keys}}
		for k, x := range extra {
			v[k] = x
		}
		return v
	}
	base := annotations(withKeys(nil, "first-key-0123456789"))
	same := annotations(withKeys(map[string]any{"replicaCount": 5, "podAnnotations": map[string]any{"a": "b"}}, "first-key-0123456789"))
	require.Equal(t, base["checksum/config"], same["checksum/config"])
	require.Equal(t, base["checksum/keys"], same["checksum/keys"])

	config := annotations(withKeys(map[string]any{"config": map[string]any{"log_level": "debug"}}, "first-key-0123456789"))
	require.NotEqual(t, base["checksum/config"], config["checksum/config"])
	require.Equal(t, base["checksum/keys"], config["checksum/keys"])

	keys := annotations(withKeys(nil, "first-key-0123456789", "second-key-0123456789"))
	require.Equal(t, base["checksum/config"], keys["checksum/config"])
	require.NotEqual(t, base["checksum/keys"], keys["checksum/keys"])
}

// TestRefused: values the chart must refuse with a message saying what to do, rather than
// render a gateway that fails at startup or silently ignores them.
func TestRefused(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		kube   string
		values map[string]any
		says   string
	}{
		{"a setting the chart owns", kube, map[string]any{"config": map[string]any{"http_addr": ":7000"}}, "config.http_addr"},
		{"the drain in the file", kube, map[string]any{"config": map[string]any{"drain_timeout": "60s"}}, "drainTimeoutSeconds"},
		{"keys in the ConfigMap", kube, map[string]any{"config": map[string]any{"api_keys": []any{"k"}}}, "keys do not belong in a ConfigMap"},
		{"the simulator in the file", kube, map[string]any{"config": map[string]any{"sim": true}}, "simulator.enabled"},
		{"a misspelt value", kube, map[string]any{"drainTimeoutSecond": 30}, "drainTimeoutSecond"},
		{"a misspelt nested value", kube, map[string]any{"serviceAccount": map[string]any{"rolearn": "x"}}, "rolearn"},
		{"a drain that is not whole seconds", kube, map[string]any{"drainTimeoutSeconds": "20s"}, "drainTimeoutSeconds"},
		{"a key over two lines", kube, map[string]any{"apiKeys": map[string]any{"keys": []any{"k1\nk2"}}}, "apiKeys"},
		{"a key read as a comment", kube, map[string]any{"apiKeys": map[string]any{"keys": []any{"#first-key-0123456789"}}}, "apiKeys"},
		{"a key under 16 characters", kube, map[string]any{"apiKeys": map[string]any{"keys": []any{"short-key"}}}, "apiKeys"},
		{"a key with a note after it", kube, map[string]any{"apiKeys": map[string]any{"keys": []any{"first-key-0123456789 # prod"}}}, "apiKeys"},
		{"a digest of the wrong length", kube, map[string]any{"apiKeys": map[string]any{"keys": []any{"sha256:abc"}}}, "apiKeys"},
		{"a Redis URL of another scheme", kube, map[string]any{"redis": map[string]any{"url": "http://redis:6379"}}, "redis"},
		{"an IRSA role that is not a role ARN", kube, map[string]any{"serviceAccount": map[string]any{"roleArn": "llm-gateway"}}, "roleArn"},
		{"a preStop sleep before Kubernetes 1.30", "v1.29.0", map[string]any{"preStopSleepSeconds": 5}, "Kubernetes 1.30"},
		{"an HPA without a CPU request", kube, map[string]any{"resources": map[string]any{"requests": map[string]any{"cpu": nil}}}, "resources.requests.cpu"},
		{"a Kubernetes older than the chart", "v1.22.0", map[string]any{}, "kubeVersion"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := Render(chartDir, release, namespace, c.kube, c.values)
			require.ErrorContains(t, err, c.says)
		})
	}
}

// TestDecodeIsStrict: the decoder itself refuses what it cannot check.
func TestDecodeIsStrict(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, doc, says string }{
		{"unknown kind", "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: x}\n", "not one the chart may render"},
		{"unknown field", "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {selectr: {a: b}}\n", "selectr"},
		{"field in the wrong case", "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {Selector: {a: b}}\n", "Selector"},
		{"field given twice", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: b}\ndata: {c: d}\n", "data"},
		{"bad name", "apiVersion: v1\nkind: Service\nmetadata: {name: Not_A_Label}\n", "metadata.name"},
		{"bad label", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, labels: {a: \"b c\"}}\n", "metadata.labels"},
		{"unknown ServiceMonitor field", "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata: {name: x}\nspec: {selector: {}, endpoints: [{port: http, intervall: 1m}]}\n", "intervall"},
		{"wrong type", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {replicas: two}\n", "replicas"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := Decode("test.yaml", c.doc)
			require.ErrorContains(t, err, c.says)
		})
	}
}
