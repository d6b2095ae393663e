package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aguic/aguic/server"
	"github.com/aguic/aguic/studio"
)

func withStudio(c *server.Config) { c.Studio = true }

// page sends GET path and returns the answer with its body read.
func (e *env) page(path string, header ...string) (*http.Response, string) {
	e.t.Helper()
	resp := e.send(http.MethodGet, path, "", header...)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatalf("GET %s: %v", path, err)
	}
	return resp, string(body)
}

// TestStudioRoutes checks what the server mounts of the studio: the page
// at /studio and /studio/, its files, a problem document for what it does
// not have, its Content-Security-Policy, and the home page's link to it.
func TestStudioRoutes(t *testing.T) {
	e := newEnv(t, withStudio)
	for _, path := range []string{"/studio", "/studio/"} {
		resp, body := e.page(path)
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		if !strings.Contains(body, `<meta name="aguic-base-path" content="/agui">`) {
			t.Errorf("GET %s: the page does not name the base path:\n%s", path, body)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); csp != studio.CSP || !strings.Contains(csp, "default-src 'self'") || strings.Contains(csp, "unsafe-inline") {
			t.Errorf("GET %s: Content-Security-Policy %q", path, csp)
		}
	}
	resp, body := e.page("/studio/js/app.js")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/javascript; charset=utf-8" || !strings.Contains(body, "import") {
		t.Errorf("GET /studio/js/app.js: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if resp.Header.Get("ETag") == "" || resp.Header.Get("Cache-Control") != "no-cache" {
		t.Errorf("GET /studio/js/app.js: ETag %q, Cache-Control %q", resp.Header.Get("ETag"), resp.Header.Get("Cache-Control"))
	}

	for _, c := range []struct {
		method, path string
		status       int
		detail       string
	}{
		{"GET", "/studio/nope.js", 404, "no route has the path /studio/nope.js"},
		{"GET", "/studio/js/", 404, "no route has the path /studio/js/"},
		{"POST", "/studio", 405, "the routes of /studio do not take POST"},
		{"DELETE", "/studio/style.css", 405, "the routes of /studio/style.css do not take DELETE"},
	} {
		p := e.problem(e.send(c.method, c.path, ""), c.status)
		if detail := str(p["detail"]); !strings.Contains(detail, c.detail) {
			t.Errorf("%s %s: detail %q, want %q", c.method, c.path, detail, c.detail)
		}
	}

	resp, body = e.page("/")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	for _, link := range []string{`href="/studio"`, `href="/docs"`, `href="/openapi.json"`} {
		if !strings.Contains(body, link) {
			t.Errorf("GET /: no link %s:\n%s", link, body)
		}
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("GET /: Content-Security-Policy %q", csp)
	}
	// Only / itself: another path is still a 404.
	if resp := e.send(http.MethodGet, "/nope", ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /nope: %d, want 404", resp.StatusCode)
	}
}

// TestStudioOff: without Config.Studio there are no studio routes, and the
// home page does not link to them.
func TestStudioOff(t *testing.T) {
	e := newEnv(t, nil)
	for _, path := range []string{"/studio", "/studio/", "/studio/js/app.js"} {
		resp := e.send(http.MethodGet, path, "")
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, resp.StatusCode)
		}
	}
	resp, body := e.page("/")
	if resp.StatusCode != http.StatusOK || strings.Contains(body, "/studio") || !strings.Contains(body, `href="/docs"`) {
		t.Errorf("GET /: %d\n%s", resp.StatusCode, body)
	}
}

// TestStudioAuth: with Auth, the studio's files and the home page need no
// token, as /docs, while the routes the page calls do; a studio path that
// is not written plainly is not public.
func TestStudioAuth(t *testing.T) {
	e := newEnv(t, func(c *server.Config) {
		withTokens(t)(c)
		c.Studio = true
	})
	for _, path := range []string{"/", "/studio", "/studio/", "/studio/style.css", "/studio/js/api.js"} {
		if resp, _ := e.page(path); resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s without a token: %d, want 200", path, resp.StatusCode)
		}
	}
	for _, path := range []string{"/studio/nope.js", "/studio/../agui/workflows"} {
		if resp, _ := e.page(path); resp.StatusCode == http.StatusOK {
			t.Errorf("GET %s without a token: 200", path)
		}
	}
	if resp, _ := e.page("/agui/workflows"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /agui/workflows without a token: %d, want 401", resp.StatusCode)
	}
	if resp, _ := e.page("/agui/workflows", "Authorization", "Bearer ada-secret-token"); resp.StatusCode != http.StatusOK {
		t.Errorf("GET /agui/workflows with a token: %d, want 200", resp.StatusCode)
	}
}

// TestStudioBasePath: the studio's path cannot be the base path of the
// AG-UI routes while the studio is served, and the page names the base
// path it is given.
func TestStudioBasePath(t *testing.T) {
	var cfg server.Config
	newServer(t, func(c *server.Config) { cfg = *c })
	cfg.BasePath, cfg.Studio = "/studio", true
	_, err := server.New(cfg)
	if err == nil || !strings.Contains(err.Error(), "taken by a public route") {
		t.Errorf("base path /studio: %v", err)
	}
	e := newEnv(t, func(c *server.Config) {
		c.Studio = true
		c.BasePath = "/api/agui"
	})
	if _, body := e.page("/studio"); !strings.Contains(body, `content="/api/agui"`) {
		t.Errorf("the page does not name the base path /api/agui:\n%s", body)
	}
}
