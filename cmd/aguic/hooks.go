package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/aguic/aguic/server"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/stdlib/llm"
)

// notifyDrain is how long aguic serve waits, once the server has stopped,
// for the completion webhook's pending messages.
const notifyDrain = 10 * time.Second

// hookOptions are the flags of the run hook, the completion webhook and
// the models a request may choose.
type hookOptions struct {
	hookURL       string
	hookTimeout   time.Duration
	hookHeaders   []string
	hookSecret    string
	webhookURL    string
	webhookSecret string
	requestModels []string
}

// define defines the flags of o.
func (o *hookOptions) define(fs *flag.FlagSet) {
	fs.StringVar(&o.hookURL, "hook-url", "", "POST every run request to this `url` first; its answer may refuse the run, add to its context and $agent, and set its scope")
	checkedVar(fs, &o.hookTimeout, "hook-timeout", server.DefaultHookTimeout.String(), "how long the run hook may take to answer before the run is refused (`duration`)", durationAtLeast(time.Millisecond))
	checkedVar(fs, &o.hookHeaders, "hook-headers", "", "the comma-separated request header `names` the run hook sees", headerNames)
	fs.StringVar(&o.hookSecret, "hook-secret", "", "sign the run hook's calls with this Standard Webhooks `secret` (whsec_…, base64)")
	fs.StringVar(&o.webhookURL, "webhook-url", "", "POST the end of every run to this `url`, in the background, retried with backoff")
	fs.StringVar(&o.webhookSecret, "webhook-secret", "", "sign the completion webhook's messages with this Standard Webhooks `secret` (whsec_…, base64)")
	checkedVar(fs, &o.requestModels, "request-models", "", "the comma-separated `models` a request may choose in forwardedProps.aguic.model for the model nodes that name none", modelList)
}

// headerNames parses --hook-headers.
func headerNames(s string) ([]string, error) {
	var names []string
	for _, n := range strings.Split(s, ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	return names, nil
}

// modelList parses --request-models: "provider/model" names.
func modelList(s string) ([]string, error) {
	var names []string
	for _, n := range strings.Split(s, ",") {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		if _, _, ok := llm.SplitModel(n); !ok {
			return nil, fmt.Errorf("%q is not a model name such as openai/gpt-4o-mini", n)
		}
		names = append(names, n)
	}
	return names, nil
}

// checkRequestModels resolves the provider of every model a request may
// choose, before anything runs; with no default model, the first is the
// default (a request then need not choose). It returns the options model
// nodes run with.
func (o hookOptions) checkRequestModels(opts stdlib.Options) (stdlib.Options, error) {
	var problems []string
	for _, name := range o.requestModels {
		if _, err := opts.Models(name); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", name, err))
		}
	}
	if len(problems) > 0 {
		return opts, errors.New("--request-models: models no provider serves:\n  " + strings.Join(problems, "\n  "))
	}
	if opts.DefaultModel == "" && len(o.requestModels) > 0 {
		opts.DefaultModel = o.requestModels[0]
	}
	return opts, nil
}

// checkSecrets checks --hook-secret and --webhook-secret before anything
// starts; setting names the flag, or the variable that set it, of a bad
// one. The error never quotes the secret.
func (o hookOptions) checkSecrets(setting func(flagName string) string) error {
	for _, s := range []struct{ flag, secret string }{{"hook-secret", o.hookSecret}, {"webhook-secret", o.webhookSecret}} {
		if err := server.CheckWebhookSecret(s.secret); err != nil {
			return fmt.Errorf("%s: %w", setting(s.flag), err)
		}
	}
	return nil
}

// wire sets the run hook, the completion webhook and the request models of
// cfg; the returned function drains the completion webhook after the
// server has stopped.
func (o hookOptions) wire(cfg *server.Config, log *slog.Logger) (drain func(), err error) {
	cfg.RequestModels = o.requestModels
	if o.hookURL != "" {
		cfg.Hook, err = server.WebhookHook(o.hookURL, server.WebhookOptions{Timeout: o.hookTimeout, Headers: o.hookHeaders, Secret: o.hookSecret, Logger: log})
		if err != nil {
			return nil, fmt.Errorf("--hook-url: %w", err)
		}
	} else if o.hookSecret != "" || len(o.hookHeaders) > 0 {
		return nil, errors.New("--hook-secret and --hook-headers need --hook-url")
	}
	if o.webhookURL == "" {
		if o.webhookSecret != "" {
			return nil, errors.New("--webhook-secret needs --webhook-url")
		}
		return func() {}, nil
	}
	n, err := server.NewNotifier(o.webhookURL, server.NotifierOptions{Secret: o.webhookSecret, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("--webhook-url: %w", err)
	}
	cfg.OnRunEnd = n.RunEnded
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), notifyDrain)
		defer cancel()
		if n.Close(ctx) != nil {
			log.Warn("the completion webhook's pending messages were dropped at the shutdown", "waited", notifyDrain.String())
		}
	}, nil
}
