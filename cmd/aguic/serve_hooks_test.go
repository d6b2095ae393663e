package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/aguic/aguic/server"
)

// testSecret is the Standard Webhooks secret of these tests.
const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// TestServeHookFlags: bad hook, webhook and request model settings are
// usage errors, found before anything is served.
func TestServeHookFlags(t *testing.T) {
	dir := t.TempDir()
	wfDir := writeWorkflow(t, dir, "ask.wf", "wf 1\n\nworkflow ask {\n  flow {\n    model { prompt = \"hi\" }\n  }\n}\n")
	script := filepath.Join(dir, "answers.script")
	if err := os.WriteFile(script, []byte("reply repeat\ntext: hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "AGUIC_MODEL", "AGUIC_REQUEST_MODELS", "AGUIC_HOOK_URL", "AGUIC_WEBHOOK_URL", "AGUIC_HOOK_SECRET", "AGUIC_WEBHOOK_SECRET"} {
		t.Setenv(v, "")
	}
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"malformed model", []string{"--request-models", "gpt-4o"}, nil, `"gpt-4o" is not a model name`},
		{"unknown provider", []string{"--request-models", "openai/gpt-4o-mini,mistral/small"}, map[string]string{"OPENAI_API_KEY": "k"}, `mistral/small: unknown model provider "mistral"`},
		{"provider from the environment", nil, map[string]string{"AGUIC_REQUEST_MODELS": "anthropic/claude-haiku-4-5"}, "anthropic/claude-haiku-4-5: no model provider is configured"},
		{"bad hook url", []string{"--model-script", script, "--hook-url", "hooks.example.com"}, nil, "--hook-url: the hook URL"},
		{"secret without url", []string{"--hook-secret", testSecret}, map[string]string{"OPENAI_API_KEY": "k", "AGUIC_MODEL": "openai/x"}, "--hook-secret and --hook-headers need --hook-url"},
		{"bad webhook secret", []string{"--webhook-url", "https://hooks.example.com", "--webhook-secret", "s3cr3t!"}, map[string]string{"OPENAI_API_KEY": "k", "AGUIC_MODEL": "openai/x"}, "aguic serve: --webhook-secret: not base64"},
		{"bad webhook secret from the environment", []string{"--webhook-url", "https://hooks.example.com"}, map[string]string{"OPENAI_API_KEY": "k", "AGUIC_MODEL": "openai/x", "AGUIC_WEBHOOK_SECRET": "s3cr3t!"}, "aguic serve: AGUIC_WEBHOOK_SECRET: not base64"},
		{"short webhook secret from the environment", nil, map[string]string{"OPENAI_API_KEY": "k", "AGUIC_MODEL": "openai/x", "AGUIC_WEBHOOK_URL": "https://hooks.example.com", "AGUIC_WEBHOOK_SECRET": "whsec_c2hvcnQ="}, "aguic serve: AGUIC_WEBHOOK_SECRET: too short"},
		{"bad hook secret", []string{"--hook-url", "https://hooks.example.com", "--hook-secret", "s3cr3t!"}, map[string]string{"OPENAI_API_KEY": "k", "AGUIC_MODEL": "openai/x"}, "aguic serve: --hook-secret: not base64"},
		{"bad hook secret from the environment", []string{"--hook-url", "https://hooks.example.com"}, map[string]string{"OPENAI_API_KEY": "k", "AGUIC_MODEL": "openai/x", "AGUIC_HOOK_SECRET": "s3cr3t!"}, "aguic serve: AGUIC_HOOK_SECRET: not base64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			args := append(append([]string{"serve", "--data", filepath.Join(t.TempDir(), "data")}, tc.args...), wfDir)
			var stdout, stderr bytes.Buffer
			if code := run(args, nil, &stdout, &stderr); code != exitUsage {
				t.Errorf("exit status %d, want %d: %s", code, exitUsage, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr %q, want %q", stderr.String(), tc.want)
			}
			if strings.Contains(stderr.String(), "s3cr3t") || strings.Contains(stderr.String(), "c2hvcnQ") {
				t.Errorf("stderr quotes the secret: %q", stderr.String())
			}
		})
	}
}

// TestServeHooks serves with a run hook, a completion webhook and request
// models, as the flags set them.
func TestServeHooks(t *testing.T) {
	dir := t.TempDir()
	wfDir := writeWorkflow(t, dir, "ask.wf", "wf 1\n\nworkflow ask {\n  flow {\n    model { prompt = \"<<$agent.latestUserMessage.content>>\" } -> $r\n    output {text: $r.text, plan: $plan}\n  }\n}\n")
	script := filepath.Join(dir, "answers.script")
	if err := os.WriteFile(script, []byte("reply repeat\ntext: fine\nusage: 3 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wh, _ := standardwebhooks.NewWebhook(testSecret)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := wh.Verify(body, r.Header); err != nil {
			t.Errorf("the run hook's call does not verify: %v", err)
		}
		var m server.WebhookMessage[server.HookCall]
		json.Unmarshal(body, &m)
		if m.Data.Headers["x-plan"] == "none" {
			io.WriteString(w, `{"allow": false, "reason": "no plan"}`)
			return
		}
		io.WriteString(w, `{"allow": true, "context": {"plan": "`+m.Data.Headers["x-plan"]+`"}}`)
	}))
	defer hook.Close()
	ended := make(chan []byte, 10)
	completion := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := wh.Verify(body, r.Header); err != nil {
			t.Errorf("the completion webhook's message does not verify: %v", err)
		}
		ended <- body
	}))
	defer completion.Close()

	srv := startServe(t, serveOptions{
		dir: wfDir, where: where{data: filepath.Join(dir, "data")}, basePath: "/agui", deadline: -1, script: script,
		hooks: hookOptions{
			hookURL: hook.URL, hookTimeout: server.DefaultHookTimeout, hookHeaders: []string{"X-Plan"}, hookSecret: testSecret,
			webhookURL: completion.URL, webhookSecret: testSecret,
			requestModels: []string{"openai/gpt-4o-mini"},
		},
	})
	send := func(thread, plan, props string) string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.url+"/agui/workflows/ask", strings.NewReader(`{"threadId": "`+thread+`", "messages": [{"id": "m1", "role": "user", "content": "hi"}], "forwardedProps": `+props+`}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Plan", plan)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	body := send("t1", "gold", `{"aguic": {"model": "openai/gpt-4o-mini"}}`)
	for _, want := range []string{`"result":{"plan":"gold","text":"fine"}`, `"provider":"openai","model":"gpt-4o-mini"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the run's stream lacks %s:\n%s", want, body)
		}
	}
	if body := send("t2", "none", `{}`); !strings.Contains(body, `"message":"no plan","code":"rejected"`) {
		t.Errorf("the refused run's stream:\n%s", body)
	}
	if body := send("t3", "gold", `{"aguic": {"model": "openai/gpt-5"}}`); !strings.Contains(body, "allowed: openai/gpt-4o-mini") {
		t.Errorf("a model not allowed:\n%s", body)
	}
	if c := srv.stop(); c != exitOK {
		t.Errorf("serve exited with %d: %s", c, srv.stderr.String())
	}
	// One run ran: its end was delivered by the time serve returned.
	select {
	case b := <-ended:
		var m server.WebhookMessage[server.RunEnd]
		if err := json.Unmarshal(b, &m); err != nil || m.Data.ThreadID != "t1" || m.Data.Outcome != "finished" {
			t.Errorf("the completion webhook got %s (%v)", b, err)
		}
	default:
		t.Errorf("the completion webhook got nothing")
	}
	if len(ended) != 0 {
		t.Errorf("the completion webhook got %d more messages", len(ended))
	}
}
