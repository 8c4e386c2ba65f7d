package chartcheck

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// ServiceMonitor is the part of the Prometheus Operator's monitoring.coreos.com/v1
// ServiceMonitor the chart writes, with the operator's field names
// (github.com/prometheus-operator/prometheus-operator pkg/apis/monitoring/v1
// servicemonitor_types.go and types.go; https://prometheus-operator.dev/docs/api-reference/api/).
// Its Go types are not in k8s.io/api and their module would pull in the operator's API
// machinery, so the fields are declared here: a field the chart adds outside them fails the
// strict decoding, and adding it here means checking it against that reference first.
type ServiceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ServiceMonitorSpec `json:"spec"`
}

// ServiceMonitorSpec selects the Services to scrape and says how.
type ServiceMonitorSpec struct {
	Selector          metav1.LabelSelector `json:"selector"`
	NamespaceSelector NamespaceSelector    `json:"namespaceSelector,omitempty"`
	Endpoints         []Endpoint           `json:"endpoints"`
	JobLabel          string               `json:"jobLabel,omitempty"`
}

// NamespaceSelector names the namespaces the selected Services may be in.
type NamespaceSelector struct {
	Any        bool     `json:"any,omitempty"`
	MatchNames []string `json:"matchNames,omitempty"`
}

// Endpoint is one port of the selected Services to scrape.
type Endpoint struct {
	Port          string `json:"port,omitempty"` // the Service port's name
	Path          string `json:"path,omitempty"`
	Scheme        string `json:"scheme,omitempty"`
	Interval      string `json:"interval,omitempty"` // a Prometheus duration: 30s, 1m
	ScrapeTimeout string `json:"scrapeTimeout,omitempty"`
	HonorLabels   bool   `json:"honorLabels,omitempty"`
}
