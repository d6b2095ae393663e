package telemetry

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// SchemaURL names the version of the OpenTelemetry semantic conventions
// the spans follow.
const SchemaURL = semconv.SchemaURL

// CaptureContentVar is the variable that, set to "true", puts the
// messages of model calls on their spans (gen_ai.input.messages,
// gen_ai.output.messages). They are left out otherwise: prompts and
// answers may hold what must not leave the process.
const CaptureContentVar = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

// Tracing is the process's tracer: where spans go and how. A nil
// *Tracing traces nothing, and every method of it, and of the values it
// returns, does nothing.
type Tracing struct {
	tp      *sdktrace.TracerProvider
	tracer  trace.Tracer
	prop    propagation.TraceContext
	capture bool  // the messages of model calls go on their spans
	where   []any // Describe's key-value pairs

	// nodes holds the *nodeStart of each *vm.Node whose visits were
	// traced: nodes belong to the programs the process serves, which
	// live as long as it does.
	nodes sync.Map
}

// Options are what Setup takes besides the environment.
type Options struct {
	// Version is aguic's version, for the instrumentation scope and the
	// resource's service.version.
	Version string
	// Getenv reads the environment; nil means os.Getenv. The exporter
	// reads the OTEL_EXPORTER_OTLP_* variables of the process itself.
	Getenv func(string) string
	// Exporter, when set, receives the spans instead of an OTLP exporter:
	// a program that embeds aguic sends them where it wants. Tracing is
	// then on without an OTLP endpoint, unless OTEL_SDK_DISABLED=true or
	// OTEL_TRACES_EXPORTER=none.
	Exporter sdktrace.SpanExporter
	// Log, when set, receives what the SDK and its exporter report of
	// themselves (an export that failed, a queue that overflowed), at
	// warning level, instead of the standard library's log on standard
	// error. It is process-wide: the SDK keeps one error handler.
	Log *slog.Logger
}

// Setup returns the tracing the environment asks for: spans exported over
// OTLP/HTTP (protobuf) when OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set, or to o.Exporter, else
// nil, which traces nothing. OTEL_SDK_DISABLED=true and
// OTEL_TRACES_EXPORTER=none turn it off too. The exporter reads its endpoint, headers, timeout, compression
// and TLS from the standard OTEL_EXPORTER_OTLP_* variables; the resource
// has service.name "aguic" unless OTEL_SERVICE_NAME or
// OTEL_RESOURCE_ATTRIBUTES say otherwise; the sampler is the SDK's,
// OTEL_TRACES_SAMPLER (parentbased_always_on by default). Only the
// http/protobuf protocol is supported: another is an error. Shutdown
// flushes what is left.
func Setup(ctx context.Context, o Options) (*Tracing, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") || strings.EqualFold(getenv("OTEL_TRACES_EXPORTER"), "none") {
		return nil, nil
	}
	if err := checkEnv(getenv); err != nil {
		return nil, err
	}
	exp := o.Exporter
	if exp == nil {
		var err error
		if exp, err = otlpExporter(ctx, getenv); exp == nil || err != nil {
			return nil, err
		}
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "aguic"), attribute.String("service.version", o.Version)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(),
	)
	if err != nil {
		return nil, fmt.Errorf("tracing: the resource: %w", err)
	}
	if log := o.Log; log != nil {
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("tracing", "error", err.Error()) }))
		otel.SetLogger(logr.FromSlogHandler(log.Handler()))
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Tracing{
		where:   describe(getenv, o.Exporter != nil),
		tp:      tp,
		tracer:  tp.Tracer("github.com/aguic/aguic", trace.WithInstrumentationVersion(o.Version), trace.WithSchemaURL(SchemaURL)),
		capture: strings.EqualFold(getenv(CaptureContentVar), "true"),
	}, nil
}

// otlpExporter returns the OTLP/HTTP exporter the environment asks for, or
// nil when it sets no endpoint.
func otlpExporter(ctx context.Context, getenv func(string) string) (sdktrace.SpanExporter, error) {
	v, e := firstSet(getenv, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
	if e == "" {
		return nil, nil
	}
	if u, err := url.Parse(e); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s=%s: want the URL of an OTLP/HTTP receiver, such as http://localhost:4318", v, e)
	}
	if v, p := firstSet(getenv, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"); p != "" && p != "http/protobuf" {
		return nil, fmt.Errorf("%s=%s: aguic exports traces over http/protobuf only", v, p)
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("tracing: the OTLP exporter: %w", err)
	}
	return exp, nil
}

// firstSet returns the first of vars that is set, and its value: a
// variable of the traces signal wins over the one of every signal.
func firstSet(getenv func(string) string, vars ...string) (name, value string) {
	for _, v := range vars {
		if value := getenv(v); value != "" {
			return v, value
		}
	}
	return "", ""
}

// samplers are the values of OTEL_TRACES_SAMPLER the SDK knows; those
// true take a ratio, OTEL_TRACES_SAMPLER_ARG.
var samplers = map[string]bool{
	"always_on": false, "always_off": false, "traceidratio": true,
	"parentbased_always_on": false, "parentbased_always_off": false, "parentbased_traceidratio": true,
}

// checkEnv refuses the OTEL_* settings that the SDK would otherwise
// replace by its defaults with a line on standard error: an exporter
// other than OTLP, a sampler it does not know, a ratio that is not one.
// Tracing everything when a sampler was asked for, or nothing when
// another exporter was, is not what the operator meant.
func checkEnv(getenv func(string) string) error {
	if e := getenv("OTEL_TRACES_EXPORTER"); e != "" && e != "otlp" {
		return fmt.Errorf("OTEL_TRACES_EXPORTER=%s: aguic exports traces over OTLP only (otlp, or none)", e)
	}
	name := getenv("OTEL_TRACES_SAMPLER")
	if name == "" {
		return nil
	}
	ratio, ok := samplers[name]
	if !ok {
		known := slices.Sorted(maps.Keys(samplers))
		return fmt.Errorf("OTEL_TRACES_SAMPLER=%s: not a sampler; want one of %s", name, strings.Join(known, ", "))
	}
	if arg := getenv("OTEL_TRACES_SAMPLER_ARG"); ratio && arg != "" {
		if r, err := strconv.ParseFloat(arg, 64); err != nil || r < 0 || r > 1 {
			return fmt.Errorf("OTEL_TRACES_SAMPLER_ARG=%s: the ratio of %s is a number from 0 to 1, such as 0.1", arg, name)
		}
	}
	return nil
}

// describe says where the spans go and which sampler keeps them.
func describe(getenv func(string) string, own bool) []any {
	where := "the program's exporter"
	if !own {
		// A signal's own endpoint is the URL; the general one gets the
		// signal's path.
		v, e := firstSet(getenv, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
		where = e
		if v == "OTEL_EXPORTER_OTLP_ENDPOINT" {
			where = strings.TrimSuffix(e, "/") + "/v1/traces"
		}
	}
	sampler := cmp.Or(getenv("OTEL_TRACES_SAMPLER"), "parentbased_always_on")
	if arg := getenv("OTEL_TRACES_SAMPLER_ARG"); arg != "" && samplers[sampler] {
		sampler += " " + arg
	}
	return []any{"traces", where, "sampler", sampler}
}

// Describe returns key-value pairs for a log line that says where the
// spans go and which sampler keeps them: "traces", the OTLP endpoint,
// "sampler", OTEL_TRACES_SAMPLER and its ratio. None without tracing.
func (t *Tracing) Describe() []any {
	if t == nil {
		return nil
	}
	return t.where
}

// On reports whether t traces.
func (t *Tracing) On() bool { return t != nil }

// Flush exports the spans that ended and are not exported yet.
func (t *Tracing) Flush(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.tp.ForceFlush(ctx)
}

// Shutdown flushes the spans left and stops exporting, within the
// deadline of ctx, or five seconds when it has none.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
	}
	return t.tp.Shutdown(ctx)
}

// Handler continues, in the context of each request h serves, the trace
// its traceparent (and tracestate) header names: a run the request starts
// is a child of the caller's span. Without tracing it returns h.
func (t *Tracing) Handler(h http.Handler) http.Handler {
	if t == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("traceparent") != "" {
			r = r.WithContext(t.prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header)))
		}
		h.ServeHTTP(w, r)
	})
}
