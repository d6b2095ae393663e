// Package otlptest is an OTLP/HTTP trace receiver for tests: a loopback
// HTTP server that decodes what an exporter sends with the official OTLP
// protobuf types and keeps the spans.
package otlptest

import (
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	common "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Receiver receives trace exports at URL + "/v1/traces".
type Receiver struct {
	URL string // the receiver's base URL, for OTEL_EXPORTER_OTLP_ENDPOINT

	t   testing.TB
	mu  sync.Mutex
	got []*tracepb.ResourceSpans
	n   int // export requests received
}

// New starts a receiver that the test's cleanup stops.
func New(t testing.TB) *Receiver {
	r := &Receiver{t: t}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		r.t.Errorf("otlptest: unexpected %s %s", req.Method, req.URL.Path)
		http.NotFound(w, req)
		return
	}
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		r.t.Errorf("otlptest: Content-Type %q, want application/x-protobuf", ct)
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	data, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var msg coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(data, &msg); err != nil {
		r.t.Errorf("otlptest: decoding an export: %v", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.got = append(r.got, msg.ResourceSpans...)
	r.n++
	r.mu.Unlock()
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// Requests is how many exports the receiver got.
func (r *Receiver) Requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// Span is a received span, its attributes decoded.
type Span struct {
	*tracepb.Span
	Resource map[string]any // the attributes of its resource
	Scope    string         // the name of its instrumentation scope
	Attrs    map[string]any // string, int64, float64, bool, or []any
}

// ID is the span's id, in hex.
func (s Span) ID() string { return hex.EncodeToString(s.SpanId) }

// Parent is the id of the span's parent, in hex; "" for a root.
func (s Span) Parent() string { return hex.EncodeToString(s.ParentSpanId) }

// Trace is the span's trace id, in hex.
func (s Span) Trace() string { return hex.EncodeToString(s.TraceId) }

// Spans returns every span received so far, in the order they came.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Span
	for _, rs := range r.got {
		res := attrs(rs.GetResource().GetAttributes())
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				out = append(out, Span{Span: sp, Resource: res, Scope: ss.GetScope().GetName(), Attrs: attrs(sp.Attributes)})
			}
		}
	}
	return out
}

func attrs(kvs []*common.KeyValue) map[string]any {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = value(kv.Value)
	}
	return m
}

func value(v *common.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *common.AnyValue_StringValue:
		return x.StringValue
	case *common.AnyValue_IntValue:
		return x.IntValue
	case *common.AnyValue_DoubleValue:
		return x.DoubleValue
	case *common.AnyValue_BoolValue:
		return x.BoolValue
	case *common.AnyValue_ArrayValue:
		var out []any
		for _, e := range x.ArrayValue.Values {
			out = append(out, value(e))
		}
		return out
	}
	return nil
}
