package metrics

import (
	"context"
	"errors"
	"time"

	"github.com/aguic/aguic/stdlib/llm"
)

// Models wraps the resolver of model names (stdlib.Options.Models): the
// providers it returns count each call, its failures, its time and the
// tokens it used, under the model's name ("provider/model"). A nil
// *Metrics, or a nil resolver, returns models itself.
func (m *Metrics) Models(models func(name string) (llm.Provider, error)) func(name string) (llm.Provider, error) {
	if m == nil || models == nil {
		return models
	}
	return func(name string) (llm.Provider, error) {
		p, err := models(name)
		if err != nil || p == nil {
			return p, err
		}
		return &countedProvider{p: p, name: name, m: m}, nil
	}
}

// countedProvider is a provider Models returns.
type countedProvider struct {
	p    llm.Provider
	name string
	m    *Metrics
}

// Stream calls the provider and counts the call: a call the run's
// cancellation cut short is a call, not an error.
func (c *countedProvider) Stream(ctx context.Context, req *llm.Request, on func(llm.Chunk) error) (*llm.Response, error) {
	start := time.Now()
	resp, err := c.p.Stream(ctx, req, on)
	m := c.m
	m.modelCalls.WithLabelValues(c.name).Inc()
	m.modelTime.WithLabelValues(c.name).Observe(time.Since(start).Seconds())
	// A call the run's end cut short is not the model's failure; one
	// that timed out is.
	if err != nil && !errors.Is(err, context.Canceled) {
		m.modelErrors.WithLabelValues(c.name).Inc()
	}
	if resp != nil {
		if n := resp.Usage.InputTokens; n > 0 {
			m.tokens.WithLabelValues(c.name, "input").Add(float64(n))
		}
		if n := resp.Usage.OutputTokens; n > 0 {
			m.tokens.WithLabelValues(c.name, "output").Add(float64(n))
		}
	}
	return resp, err
}
