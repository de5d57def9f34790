// Command promparse reads the Prometheus text exposition format on stdin with the parser Prometheus
// itself uses (github.com/prometheus/common/expfmt) and writes the parsed families as JSON on stdout.
// The tests scrape /metrics through it, so what they assert is what a Prometheus server would read;
// text the parser refuses exits 1 with its error.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

type bucket struct {
	Le    string `json:"le"` // as Prometheus writes it: "0.005", "+Inf"
	Count uint64 `json:"count"`
}

type sample struct {
	Labels  map[string]string `json:"labels"`
	Value   *float64          `json:"value,omitempty"`
	Count   *uint64           `json:"count,omitempty"`
	Sum     *float64          `json:"sum,omitempty"`
	Buckets []bucket          `json:"buckets,omitempty"`
}

type family struct {
	Name    string   `json:"name"`
	Type    string   `json:"type"`
	Help    string   `json:"help"`
	Samples []sample `json:"samples"`
}

func main() {
	var parser expfmt.TextParser
	families, err := parser.TextToMetricFamilies(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	out := []family{}
	for name, f := range families {
		fam := family{Name: name, Type: f.GetType().String(), Help: f.GetHelp(), Samples: []sample{}}
		for _, m := range f.GetMetric() {
			s := sample{Labels: map[string]string{}}
			for _, l := range m.GetLabel() {
				s.Labels[l.GetName()] = l.GetValue()
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				v := m.GetCounter().GetValue()
				s.Value = &v
			case dto.MetricType_GAUGE:
				v := m.GetGauge().GetValue()
				s.Value = &v
			case dto.MetricType_UNTYPED:
				v := m.GetUntyped().GetValue()
				s.Value = &v
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				c, sum := h.GetSampleCount(), h.GetSampleSum()
				s.Count, s.Sum = &c, &sum
				for _, b := range h.GetBucket() {
					s.Buckets = append(s.Buckets, bucket{Le: model.FloatString(b.GetUpperBound()).String(), Count: b.GetCumulativeCount()})
				}
			case dto.MetricType_SUMMARY:
				c, sum := m.GetSummary().GetSampleCount(), m.GetSummary().GetSampleSum()
				s.Count, s.Sum = &c, &sum
			}
			fam.Samples = append(fam.Samples, s)
		}
		out = append(out, fam)
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
