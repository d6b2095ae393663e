package main

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aguic/aguic/server"
)

// TestServeAuthFlags checks that bad authentication, tenancy and CORS
// settings are usage errors: status 2, a message that says what is wrong
// and never quotes a token, and nothing served.
func TestServeAuthFlags(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bad := write("bad.txt", "ada SECRET-1\nbob\n")
	good := write("good.txt", "ada SECRET-1\n")
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"missing file", []string{"--tokens", filepath.Join(dir, "none.txt")}, nil, "none.txt: no such file or directory"},
		{"bad file", []string{"--tokens", bad}, nil, bad + `:2: expected "name token" or "name:token", found one word`},
		{"bad file from the environment", nil, map[string]string{"AGUIC_TOKENS_FILE": bad}, bad + ":2: expected"},
		{"bad list", nil, map[string]string{"AGUIC_TOKENS": "ada:SECRET-1,:SECRET-2"}, "AGUIC_TOKENS: pair 2: a token has no name"},
		{"file and list", nil, map[string]string{"AGUIC_TOKENS_FILE": good, "AGUIC_TOKENS": "ada:SECRET-1"}, "both set"},
		{"tokens and scope header", []string{"--tokens", good, "--scope-header", "X-Tenant"}, nil, "--scope-header: with --tokens"},
		{"scope header from the environment", []string{"--tokens", good}, map[string]string{"AGUIC_SCOPE_HEADER": "X-Tenant"}, "--scope-header: with --tokens"},
		{"bad origin", []string{"--cors-origins", "*,localhost:3000"}, nil, `-cors-origins: origin "localhost:3000"`},
		{"public metrics that are off", []string{"--metrics=false", "--metrics-public"}, nil, "--metrics-public: the metrics are off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, v := range []string{"AGUIC_TOKENS_FILE", "AGUIC_TOKENS", "AGUIC_SCOPE_HEADER", "AGUIC_CORS_ORIGINS"} {
				t.Setenv(v, tc.env[v])
			}
			var stdout, stderr bytes.Buffer
			// The directory does not exist: the flags are read first.
			code := run(append(append([]string{"serve"}, tc.args...), filepath.Join(dir, "missing")), nil, &stdout, &stderr)
			if code != exitUsage {
				t.Errorf("exit status %d, want %d", code, exitUsage)
			}
			if got := stderr.String(); !strings.Contains(got, tc.want) || strings.Contains(got, "SECRET") || strings.Contains(got, "no such file or directory") && !strings.Contains(tc.want, "no such file") {
				t.Errorf("stderr %q, want %q", got, tc.want)
			}
		})
	}
}

// TestServeAuth serves with tokens and CORS, as the flags set them: a
// request needs a token, the token's name is the scope, the health check
// stays open, and browsers of the listed origin may call.
func TestServeAuth(t *testing.T) {
	dir := t.TempDir()
	wfDir := writeWorkflow(t, dir, "hello.wf", "wf 1\n\nworkflow hello {\n  title = \"Hello\"\n  conversation = true\n  flow {\n    say \"hello <<$agent.latestUserMessage.content>>\"\n    wait: suspend\n  }\n}\n")
	tokensFile := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokensFile, []byte("# who may call\nada ada-token\nbob:bob-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AGUIC_TOKENS", "")
	toks, err := loadTokens(tokensFile, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	srv := startServe(t, serveOptions{
		dir: wfDir, where: where{data: filepath.Join(dir, "data")},
		basePath: "/agui", deadline: -1,
		tokens: toks, corsOrigins: []string{"http://localhost:3000"},
	})
	url := srv.url
	stderr := srv.stderr
	send := func(method, path, body string, header ...string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(method, url+path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	run := `{"threadId": "t1", "messages": [{"id": "m1", "role": "user", "content": "world"}]}`

	resp, body := send(http.MethodPost, "/agui/workflows/hello", run)
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("without a token: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	if resp, _ := send(http.MethodGet, "/healthz", ""); resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz: %d", resp.StatusCode)
	}
	resp, body = send(http.MethodPost, "/agui/workflows/hello", run, "Authorization", "Bearer ada-token", "Origin", "http://localhost:3000")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"delta":"hello world"`) || resp.Header.Get("Access-Control-Allow-Origin") != "http://localhost:3000" {
		t.Errorf("ada's run: %d %v\n%s", resp.StatusCode, resp.Header, body)
	}
	// Bob has no thread t1.
	if resp, body := send(http.MethodGet, "/agui/threads/t1/messages", "", "Authorization", "Bearer bob-token"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("bob read ada's thread: %d %s", resp.StatusCode, body)
	}
	if resp, body := send(http.MethodGet, "/agui/threads/t1/messages", "", "Authorization", "Bearer ada-token"); resp.StatusCode != http.StatusOK || !strings.Contains(body, "hello world") {
		t.Errorf("ada's thread: %d %s", resp.StatusCode, body)
	}
	resp, _ = send(http.MethodOptions, "/agui/workflows/hello", "", "Origin", "http://localhost:3000", "Access-Control-Request-Method", "POST")
	if resp.StatusCode != http.StatusNoContent || !strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Errorf("preflight: %d %v", resp.StatusCode, resp.Header)
	}

	if c := srv.stop(); c != exitOK {
		t.Errorf("serve exited with %d: %s", c, stderr.String())
	}
	if strings.Contains(stderr.String(), "ada-token") {
		t.Errorf("the log holds a token:\n%s", stderr.String())
	}
}

// TestServeMetrics serves with tokens and metrics, as the flags set them:
// /metrics needs a token, unless --metrics-public, and counts the runs
// and the threads of the data directory.
func TestServeMetrics(t *testing.T) {
	for _, public := range []bool{false, true} {
		t.Run(map[bool]string{false: "token", true: "public"}[public], func(t *testing.T) {
			dir := t.TempDir()
			wfDir := writeWorkflow(t, dir, "hello.wf", "wf 1\n\nworkflow hello {\n  title = \"Hello\"\n  conversation = true\n  flow {\n    say \"hello\"\n    wait: suspend\n  }\n}\n")
			toks, err := server.TokenList("AGUIC_TOKENS", "ada:ada-token")
			if err != nil {
				t.Fatal(err)
			}
			srv := startServe(t, serveOptions{
				dir: wfDir, where: where{data: filepath.Join(dir, "data")},
				basePath: "/agui", deadline: -1, tokens: toks,
				metrics: true, metricsPublic: public,
			})
			get := func(path, token string) (int, string) {
				t.Helper()
				req, _ := http.NewRequest(http.MethodPost, srv.url+path, strings.NewReader(`{"threadId": "t1", "messages": [{"id": "m1", "role": "user", "content": "hi"}]}`))
				if path == "/metrics" {
					req, _ = http.NewRequest(http.MethodGet, srv.url+path, nil)
				}
				req.Header.Set("Content-Type", "application/json")
				if token != "" {
					req.Header.Set("Authorization", "Bearer "+token)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(b)
			}
			if code, body := get("/agui/workflows/hello", "ada-token"); code != http.StatusOK {
				t.Fatalf("run: %d %s", code, body)
			}
			code, body := get("/metrics", "")
			if !public {
				if code != http.StatusUnauthorized {
					t.Errorf("/metrics without a token: %d, want 401", code)
				}
				code, body = get("/metrics", "ada-token")
			}
			if code != http.StatusOK {
				t.Fatalf("/metrics: %d %s", code, body)
			}
			for _, want := range []string{`aguic_runs_total{outcome="suspended",workflow="hello"} 1`, `aguic_threads{status="suspended"} 1`} {
				if !strings.Contains(body, want+"\n") {
					t.Errorf("/metrics has no line %s:\n%s", want, body)
				}
			}
			if c := srv.stop(); c != exitOK {
				t.Errorf("serve exited with %d: %s", c, srv.stderr.String())
			}
		})
	}
}
