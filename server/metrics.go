package server

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the server's Prometheus collectors, in a registry of its
// own (no global state: tests run many servers in one process).
type metrics struct {
	reg       *prometheus.Registry
	requests  *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	decisions *prometheus.CounterVec
	recall    prometheus.Histogram
	evaluate  prometheus.Histogram
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "docket_http_requests_total", Help: "HTTP requests by route, method and status code.",
		}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "docket_http_request_duration_seconds", Help: "HTTP request latency by route.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"route"}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "docket_decisions_total", Help: "Decisions stored, by source (write, evaluate) and outcome.",
		}, []string{"source", "outcome"}),
		recall: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "docket_recall_duration_seconds", Help: "Store recall latency.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25},
		}),
		evaluate: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "docket_evaluate_duration_seconds", Help: "Judge chain latency of POST /v1/judge/evaluate.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1, 5},
		}),
	}
	m.reg.MustRegister(m.requests, m.latency, m.decisions, m.recall, m.evaluate,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) observe(route string, code int, d time.Duration) {
	m.requests.WithLabelValues(route, strconv.Itoa(code)).Inc()
	m.latency.WithLabelValues(route).Observe(d.Seconds())
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
