package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v4"
)

// TestOpenAPI: aguic openapi prints, without a server, the bytes a server
// started with the same workflows and flags serves at /openapi.json and
// /openapi.yaml, and opens no data directory.
func TestOpenAPI(t *testing.T) {
	dir := t.TempDir()
	wfDir := writeWorkflow(t, dir, "hello.wf", "wf 1\n\nworkflow hello {\n  flow { say \"hello\" }\n}\n")
	tokensFile := filepath.Join(dir, "tokens.txt")
	if err := os.WriteFile(tokensFile, []byte("ada ada-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"AGUIC_TOKENS", "AGUIC_TOKENS_FILE", "AGUIC_BASE_PATH", "AGUIC_JWT_ISSUER", "AGUIC_JWT_JWKS_URL"} {
		t.Setenv(v, "")
	}
	data := filepath.Join(dir, "data")
	t.Setenv("AGUIC_DATA", data)

	for _, tc := range []struct {
		name string
		args []string
		o    serveOptions
	}{
		{"defaults", nil, serveOptions{basePath: "/agui"}},
		{"base path and tokens", []string{"--base-path", "/api/agui", "--tokens", tokensFile}, serveOptions{basePath: "/api/agui"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			o.dir, o.where.data, o.deadline = wfDir, filepath.Join(t.TempDir(), "data"), -1
			if strings.Contains(tc.name, "tokens") {
				toks, err := loadTokens(tokensFile, os.Getenv)
				if err != nil {
					t.Fatal(err)
				}
				o.tokens = toks
			}
			srv := startServe(t, o)
			for _, format := range []string{"json", "yaml"} {
				// The 3.0 document: what /openapi-3.0.* serves.
				var down bytes.Buffer
				args := append([]string{"openapi", "--downgrade", "--format", format}, tc.args...)
				if code := run(append(args, wfDir), nil, &down, io.Discard); code != exitOK {
					t.Fatalf("aguic %s: exit status %d", strings.Join(args, " "), code)
				}
				served := get(t, srv.url+"/openapi-3.0."+format)
				if format == "json" {
					served = append(served, '\n')
				}
				if !bytes.Equal(down.Bytes(), served) || !bytes.Contains(down.Bytes(), []byte("3.0.3")) {
					t.Errorf("--downgrade --format %s: the output differs from /openapi-3.0.%s", format, format)
				}

				var stdout, stderr bytes.Buffer
				args = append([]string{"openapi", "--format", format}, tc.args...)
				if code := run(append(args, wfDir), nil, &stdout, &stderr); code != exitOK {
					t.Fatalf("aguic %s: exit status %d: %s", strings.Join(args, " "), code, stderr.String())
				}
				served = get(t, srv.url+"/openapi."+format)
				if format == "json" {
					served = append(served, '\n')
				}
				if !bytes.Equal(stdout.Bytes(), served) {
					t.Errorf("--format %s: the output differs from /openapi.%s:\n%s\n----\n%s", format, format, stdout.Bytes(), served)
				}
				var doc map[string]any
				if format == "json" {
					err := json.Unmarshal(stdout.Bytes(), &doc)
					if err != nil || doc["openapi"] != "3.1.0" {
						t.Errorf("not an OpenAPI 3.1 document: %v, %v", err, doc["openapi"])
					}
				} else if err := yaml.Unmarshal(stdout.Bytes(), &doc); err != nil || doc["openapi"] != "3.1.0" {
					t.Errorf("not an OpenAPI 3.1 document in YAML: %v, %v", err, doc["openapi"])
				}
				if paths, _ := doc["paths"].(map[string]any); paths[o.basePath+"/workflows/{id}"] == nil {
					t.Errorf("no %s/workflows/{id} in the paths", o.basePath)
				}
				_, secured := doc["components"].(map[string]any)["securitySchemes"]
				if secured != (o.tokens != nil) {
					t.Errorf("security schemes: %v, want %v", secured, o.tokens != nil)
				}
			}
		})
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Errorf("aguic openapi touched the data directory: %v", err)
	}

	// JWTs document the same bearer tokens as --tokens, and nothing is
	// fetched from the issuer to know it.
	openapi := func(args ...string) []byte {
		t.Helper()
		var out, errs bytes.Buffer
		if code := run(append(append([]string{"openapi"}, args...), wfDir), nil, &out, &errs); code != exitOK {
			t.Fatalf("aguic openapi %s: exit status %d: %s", strings.Join(args, " "), code, errs.String())
		}
		return out.Bytes()
	}
	withTokens := openapi("--tokens", tokensFile)
	if got := openapi("--jwt-issuer", "https://issuer.invalid"); !bytes.Equal(got, withTokens) {
		t.Errorf("--jwt-issuer: the document differs from the one of --tokens")
	}
	t.Setenv("AGUIC_JWT_JWKS_URL", "https://issuer.invalid/jwks.json")
	if got := openapi(); !bytes.Equal(got, withTokens) {
		t.Errorf("AGUIC_JWT_JWKS_URL: the document differs from the one of --tokens")
	}
	t.Setenv("AGUIC_JWT_JWKS_URL", "")

	// Errors: a bad format, sources with errors.
	var stderr bytes.Buffer
	if code := run([]string{"openapi", "--format", "xml", wfDir}, nil, io.Discard, &stderr); code != exitUsage || !strings.Contains(stderr.String(), `aguic openapi: unknown format "xml" (want json or yaml)`) {
		t.Errorf("--format xml: %d %s", code, stderr.String())
	}
	broken := filepath.Join(dir, "broken")
	os.Mkdir(broken, 0o755)
	os.WriteFile(filepath.Join(broken, "bad.wf"), []byte("wf 1\n\nworkflow bad {\n  flow { sya \"hi\" }\n}\n"), 0o644)
	stderr.Reset()
	var stdout bytes.Buffer
	if code := run([]string{"openapi", broken}, nil, &stdout, &stderr); code != exitFound || stdout.Len() > 0 || !strings.Contains(stderr.String(), "bad.wf:4:10: error[WF101]") {
		t.Errorf("broken sources: %d, stdout %q, stderr %s", code, stdout.String(), stderr.String())
	}
}

func get(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return body
}
