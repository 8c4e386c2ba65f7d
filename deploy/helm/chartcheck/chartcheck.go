// Package chartcheck renders the gateway's Helm chart (deploy/helm/llm-gateway) the way
// `helm template` does, client-only, and decodes every manifest strictly into the
// Kubernetes API types: a field the API server would not know, one spelled in the wrong
// case, or one given twice is an error, and so is a kind this package does not list.
//
// It is a module of its own so that the gateway's `go test ./...` never compiles Helm and
// the Kubernetes API; `make chart` runs its tests.
package chartcheck

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/releaseutil"
)

// Object is one rendered manifest, decoded.
type Object struct {
	Source string // the template it came from, as Helm's "# Source:" line names it
	Kind   string // apiVersion/kind, e.g. "apps/v1/Deployment"
	Meta   *metav1.ObjectMeta
	Value  any // *appsv1.Deployment, *corev1.Service, …, *ServiceMonitor
}

// kinds are the only objects the chart may render, each with the Go type it is decoded into
// and how its name is checked (Services are DNS-1035 labels; the rest DNS-1123 subdomains).
var kinds = map[string]kind{
	"apps/v1/Deployment":                      kindOf[appsv1.Deployment](apivalidation.NameIsDNSSubdomain),
	"v1/Service":                              kindOf[corev1.Service](apivalidation.NameIsDNS1035Label),
	"v1/ServiceAccount":                       kindOf[corev1.ServiceAccount](apivalidation.NameIsDNSSubdomain),
	"v1/ConfigMap":                            kindOf[corev1.ConfigMap](apivalidation.NameIsDNSSubdomain),
	"v1/Secret":                               kindOf[corev1.Secret](apivalidation.NameIsDNSSubdomain),
	"autoscaling/v2/HorizontalPodAutoscaler":  kindOf[autoscalingv2.HorizontalPodAutoscaler](apivalidation.NameIsDNSSubdomain),
	"policy/v1/PodDisruptionBudget":           kindOf[policyv1.PodDisruptionBudget](apivalidation.NameIsDNSSubdomain),
	"monitoring.coreos.com/v1/ServiceMonitor": kindOf[ServiceMonitor](apivalidation.NameIsDNSSubdomain),
}

type kind struct {
	new  func() (any, *metav1.ObjectMeta) // a zero object, and its metadata
	name apivalidation.ValidateNameFunc
}

func kindOf[T any, P interface {
	*T
	metav1.ObjectMetaAccessor
}](name apivalidation.ValidateNameFunc) kind {
	return kind{func() (any, *metav1.ObjectMeta) {
		p := P(new(T))
		return p, p.GetObjectMeta().(*metav1.ObjectMeta)
	}, name}
}

// Decode reads one manifest strictly: YAML with a key given twice, an unknown kind, an
// unknown or miscased field, or invalid metadata (name, labels, annotations) is an error.
// Decoding is sigs.k8s.io/json's strict mode, the one the API server's strict field
// validation uses; unlike encoding/json it matches field names case-sensitively.
func Decode(source, manifest string) (Object, error) {
	js, err := yaml.YAMLToJSONStrict([]byte(manifest))
	if err != nil {
		return Object{}, fmt.Errorf("%s: %w", source, err)
	}
	var tm metav1.TypeMeta
	if err := kjson.UnmarshalCaseSensitivePreserveInts(js, &tm); err != nil {
		return Object{}, fmt.Errorf("%s: %w", source, err)
	}
	kind := tm.APIVersion + "/" + tm.Kind
	k, ok := kinds[kind]
	if !ok {
		return Object{}, fmt.Errorf("%s: kind %q is not one the chart may render (add it to chartcheck's kinds with its Go type)", source, kind)
	}
	v, meta := k.new()
	strict, err := kjson.UnmarshalStrict(js, v, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return Object{}, fmt.Errorf("%s: %s: %w", source, kind, err)
	}
	if len(strict) > 0 {
		return Object{}, fmt.Errorf("%s: %s: %w", source, kind, errors.Join(strict...))
	}
	if errs := apivalidation.ValidateObjectMeta(meta, false, k.name, field.NewPath("metadata")); len(errs) > 0 {
		return Object{}, fmt.Errorf("%s: %s: %w", source, kind, errs.ToAggregate())
	}
	return Object{Source: source, Kind: kind, Meta: meta, Value: v}, nil
}

// Rendered is the chart as `helm template` prints it, decoded.
type Rendered struct {
	Objects []Object
	Notes   string // NOTES.txt
}

// Render renders the chart at dir client-only, as `helm template --kube-version kube`
// does, with the given values over the chart's, and decodes every manifest. Values are
// checked against the chart's values.schema.json.
func Render(dir, release, namespace, kube string, values map[string]any) (Rendered, error) {
	chrt, err := loader.Load(dir)
	if err != nil {
		return Rendered{}, err
	}
	kv, err := chartutil.ParseKubeVersion(kube)
	if err != nil {
		return Rendered{}, err
	}
	install := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	install.DryRun = true
	install.DryRunOption = "client"
	install.ClientOnly = true
	install.Replace = true
	install.ReleaseName = release
	install.Namespace = namespace
	install.KubeVersion = kv
	rel, err := install.Run(chrt, values)
	if err != nil {
		return Rendered{}, err
	}
	if len(rel.Hooks) > 0 {
		return Rendered{}, fmt.Errorf("the chart renders %d hooks; chartcheck checks none", len(rel.Hooks))
	}
	split := releaseutil.SplitManifests(rel.Manifest)
	names := make([]string, 0, len(split))
	for name := range split {
		names = append(names, name)
	}
	// manifest-0, manifest-1, …: in the order Helm printed them.
	slices.SortFunc(names, func(a, b string) int { return manifestIndex(a) - manifestIndex(b) })
	out := Rendered{Notes: rel.Info.Notes}
	seen := map[string]string{}
	var errs []error
	for _, name := range names {
		doc := split[name]
		source := name
		if line, _, ok := strings.Cut(doc, "\n"); ok && strings.HasPrefix(line, "# Source: ") {
			source = strings.TrimPrefix(line, "# Source: ")
		}
		obj, err := Decode(source, doc)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		id := obj.Kind + " " + obj.Meta.Name
		if prev, dup := seen[id]; dup {
			errs = append(errs, fmt.Errorf("%s: %s rendered twice (also by %s)", source, id, prev))
		}
		seen[id] = source
		out.Objects = append(out.Objects, obj)
	}
	return out, errors.Join(errs...)
}

func manifestIndex(name string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(name, "manifest-"))
	return n
}

// Lint runs `helm lint --strict --kube-version kube` on the chart at dir with the given
// values: a warning fails as an error does.
func Lint(dir, namespace, kube string, values map[string]any) error {
	kv, err := chartutil.ParseKubeVersion(kube)
	if err != nil {
		return err
	}
	lint := action.NewLint()
	lint.Strict = true
	lint.Namespace = namespace
	lint.KubeVersion = kv
	res := lint.Run([]string{dir}, values)
	if res.TotalChartsLinted != 1 && len(res.Errors) == 0 {
		return fmt.Errorf("helm lint linted %d charts, want 1", res.TotalChartsLinted)
	}
	return errors.Join(res.Errors...)
}

// Of returns the objects of one kind ("apps/v1/Deployment"), typed.
func Of[T any](r Rendered, kind string) []*T {
	var out []*T
	for _, o := range r.Objects {
		if o.Kind == kind {
			out = append(out, o.Value.(*T))
		}
	}
	return out
}
