// Package metricstest reads a Prometheus text page in tests: linted by the client library's linter and
// parsed into families, and the value of one series.
package metricstest

import (
	"bytes"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Parse fails the test on anything promlint reports about body (where names the page in messages) and
// returns its families by name.
func Parse(t testing.TB, where string, body []byte) map[string]*dto.MetricFamily {
	t.Helper()
	problems, err := promlint.New(bytes.NewReader(body)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: promlint: %s: %s", where, p.Metric, p.Text)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// Value is the value of the series of family name with exactly labels (name, value pairs; a
// histogram's count), or -1 when there is none.
func Value(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	f, ok := fams[name]
	if !ok {
		return -1
	}
next:
	for _, m := range f.Metric {
		if len(m.Label)*2 != len(labels) {
			continue
		}
		for i, l := range m.Label {
			if l.GetName() != labels[2*i] || l.GetValue() != labels[2*i+1] {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return -1
}
