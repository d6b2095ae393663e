package server_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/aguic/aguic/server"
)

// docsServer serves DocsHandler the way the server mounts it.
func docsServer(t *testing.T) *httptest.Server {
	t.Helper()
	h := server.DocsHandler("aguic", "/openapi.json", "/docs")
	mux := http.NewServeMux()
	mux.Handle("/docs", h)
	mux.Handle("/docs/", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func fetch(t *testing.T, c *http.Client, u string) (*http.Response, []byte) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	return resp, body
}

// page is what the docs page refers to and runs.
type page struct {
	refs    []string // src, href and the like, as written
	scripts []string // inline <script> text
	styles  []string // inline <style> text and style attributes
}

// urlAttrs are the HTML attributes whose value the browser loads or
// navigates to.
var urlAttrs = map[string]bool{"src": true, "href": true, "srcset": true, "poster": true, "action": true, "formaction": true, "data": true, "background": true, "manifest": true}

func parsePage(t *testing.T, body []byte) page {
	t.Helper()
	var p page
	z := html.NewTokenizer(bytes.NewReader(body))
	inside := ""
	for {
		switch z.Next() {
		case html.ErrorToken:
			if z.Err() != io.EOF {
				t.Fatalf("parsing the page: %v", z.Err())
			}
			return p
		case html.StartTagToken, html.SelfClosingTagToken:
			tok := z.Token()
			inside = tok.Data
			for _, a := range tok.Attr {
				switch {
				case urlAttrs[a.Key]:
					p.refs = append(p.refs, a.Val)
				case a.Key == "style":
					p.styles = append(p.styles, a.Val)
				}
			}
		case html.TextToken:
			switch inside {
			case "script":
				p.scripts = append(p.scripts, string(z.Text()))
			case "style":
				p.styles = append(p.styles, string(z.Text()))
			}
		case html.EndTagToken:
			inside = ""
		}
	}
}

// TestDocsPage checks the page and its assets, from DocsHandler alone and
// from the server, which mounts it.
func TestDocsPage(t *testing.T) {
	alone := docsServer(t)
	t.Run("handler", func(t *testing.T) { checkDocs(t, alone) })
	e := newEnv(t, nil)
	t.Run("server", func(t *testing.T) { checkDocs(t, e.http) })
}

func checkDocs(t *testing.T, srv *httptest.Server) {
	c := srv.Client()
	base, _ := url.Parse(srv.URL)

	resp, body := fetch(t, c, srv.URL+"/docs")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /docs: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if !bytes.Contains(bytes.ToLower(body), []byte("<!doctype html>")) || !bytes.Contains(body, []byte(" - Swagger UI</title>")) {
		t.Errorf("GET /docs is not the Swagger UI page:\n%s", body)
	}
	if _, again := fetch(t, c, srv.URL+"/docs/"); !bytes.Equal(again, body) {
		t.Error("GET /docs/ is not the page GET /docs is")
	}
	p := parsePage(t, body)

	// The page's own script: the spec it loads, and no online validator
	// (Swagger UI's default sends the spec's URL to validator.swagger.io).
	inline := strings.Join(p.scripts, "\n")
	for _, want := range []string{`"swaggerJsonUrl":"/openapi.json"`, "validatorUrl: null"} {
		if !strings.Contains(inline, want) {
			t.Errorf("the page's script has no %s:\n%s", want, inline)
		}
	}
	checkText(t, "the page", string(body))

	// Every asset is the handler's, and is served.
	var js, css int
	for _, ref := range p.refs {
		u, err := base.Parse("/docs")
		if err == nil {
			u, err = u.Parse(ref)
		}
		if err != nil {
			t.Errorf("reference %q: %v", ref, err)
			continue
		}
		if u.Scheme != base.Scheme || u.Host != base.Host || !strings.HasPrefix(u.Path, "/docs/") {
			t.Errorf("the page loads %q from elsewhere than the handler", ref)
			continue
		}
		resp, asset := fetch(t, c, u.String())
		ct := resp.Header.Get("Content-Type")
		if resp.StatusCode != http.StatusOK || len(asset) == 0 {
			t.Errorf("GET %s: status %d, %d bytes", u.Path, resp.StatusCode, len(asset))
			continue
		}
		switch {
		case strings.HasSuffix(u.Path, ".js"):
			js++
			if !strings.Contains(ct, "javascript") {
				t.Errorf("GET %s: Content-Type %q", u.Path, ct)
			}
			checkText(t, u.Path, string(asset))
		case strings.HasSuffix(u.Path, ".css"):
			css++
			if !strings.HasPrefix(ct, "text/css") {
				t.Errorf("GET %s: Content-Type %q", u.Path, ct)
			}
			checkCSS(t, u.Path, string(asset))
			checkText(t, u.Path, string(asset))
		case strings.HasSuffix(u.Path, ".png"):
			if ct != "image/png" {
				t.Errorf("GET %s: Content-Type %q", u.Path, ct)
			}
		default:
			t.Errorf("the page refers to %s: an asset this test does not check", u.Path)
		}
	}
	if js < 2 || css < 1 {
		t.Errorf("the page loads %d scripts and %d style sheets: %q", js, css, p.refs)
	}
	for _, s := range p.styles {
		checkCSS(t, "the page's style", s)
	}

	// Nothing else under /docs.
	for _, path := range []string{"/docs/nope.js", "/docs/embed.go", "/docs/static/embed.go"} {
		if resp, _ := fetch(t, c, srv.URL+path); resp.StatusCode == http.StatusOK {
			t.Errorf("GET %s: 200", path)
		}
	}
}

// TestDocsEncoding checks the assets reach a client that does not take
// gzip (they are stored compressed) and one that does.
func TestDocsEncoding(t *testing.T) {
	h := server.DocsHandler("aguic", "/openapi.json", "/docs")
	for _, enc := range []string{"", "gzip"} {
		req := httptest.NewRequest(http.MethodGet, "/docs/swagger-ui-bundle.js", nil)
		if enc != "" {
			req.Header.Set("Accept-Encoding", enc)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("Accept-Encoding %q: status %d", enc, rec.Code)
		}
		var body io.Reader = rec.Body
		if got := rec.Header().Get("Content-Encoding"); got != enc {
			t.Errorf("Accept-Encoding %q: Content-Encoding %q", enc, got)
		}
		if enc == "gzip" {
			zr, err := gzip.NewReader(rec.Body)
			if err != nil {
				t.Fatal(err)
			}
			body = zr
		}
		js, err := io.ReadAll(body)
		if err != nil || !bytes.Contains(js, []byte("SwaggerUIBundle")) {
			t.Errorf("Accept-Encoding %q: %d bytes of JavaScript, %v", enc, len(js), err)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/docs", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /docs: status %d, want 405", rec.Code)
	}
}

// offlineHosts are the hosts that occur in absolute URLs of the page and its
// assets (Swagger UI 5.29.1), each reviewed: none is loaded by the page. A
// new host fails the test until it is reviewed and added. The URLs are all
// in string literals of the code, none in comments, so exempting comments
// would exempt nothing: every occurrence counts.
var offlineHosts = map[string]string{
	"www.w3.org":        "XML namespace names (SVG, XHTML, XLink, MathML), compared, never fetched",
	"json-schema.org":   "JSON Schema dialect identifiers ($schema values), compared, never fetched",
	"spec.openapis.org": "the OpenAPI 3.1 dialect identifier, compared, never fetched",

	"datatracker.ietf.org": "RFC references in ABNF grammar text and messages",
	"www.rfc-editor.org":   "RFC references in ABNF grammar text",
	"github.com":           "core-js licence and source metadata, highlight.js deprecation messages",
	"reactjs.org":          "React's error-decoder link in error messages",
	"redux.js.org":         "Redux's error link in error messages",
	"fb.me":                "a React PropTypes link in an error message",

	"example.com": "example values shown for the uri format",
	"실례.com":      "example values shown for the iri format",

	"swagger.io":        "a dummy base for new URL() when resolving relative references",
	"vladimirgorej.com": "a dummy base for new URL() when checking a URL template",
	"base":              "a dummy base for new URL() (`https://base${Math.random()}`)",

	"twitter.com":          "Markdown linkify templates for @mentions and #hashtags: links, not loads",
	"www.facebook.com":     "Markdown linkify templates for #hashtags: links, not loads",
	"instagram.com":        "Markdown linkify templates for @mentions and #hashtags: links, not loads",
	"www.tiktok.com":       "Markdown linkify templates for @mentions and #hashtags: links, not loads",
	"soundcloud.com":       "Markdown linkify templates for @mentions: links, not loads",
	"spdx.org":             "the link Swagger UI makes of info.license.identifier: a link, not a load",
	"validator.swagger.io": "Swagger UI's default validatorUrl, unused: the page sets validatorUrl null (checked above)",
}

var (
	// absURL is an absolute http(s) URL and its host. An empty host is
	// the scheme alone ("https://" in a check of a URL's prefix) when a
	// quote or a space follows it; otherwise a host built at run time.
	absURL = regexp.MustCompile(`(?i)https?://([\p{L}\p{N}.-]*)(.?)`)
	// cdnHost names hosts that serve web assets and fonts.
	cdnHost = regexp.MustCompile(`(?i)unpkg\.com|jsdelivr|cdnjs|cloudflare|googleapis|gstatic|typekit|fontawesome|bootstrapcdn|jquery\.com|rsms\.me|fonts\.`)
)

// checkText fails on a CDN name anywhere in text, and on an absolute URL
// whose host has not been reviewed.
func checkText(t *testing.T, name, text string) {
	t.Helper()
	if m := cdnHost.FindAllString(text, 5); m != nil {
		t.Errorf("%s names CDN or font hosts: %q", name, m)
	}
	seen := map[string]bool{}
	for _, m := range absURL.FindAllStringSubmatch(text, -1) {
		host, next := strings.ToLower(m[1]), m[2]
		if host == "" {
			if next != "" && !strings.ContainsAny(next, "\"'` \n") {
				t.Errorf("%s builds an absolute URL's host at run time: %q", name, m[0])
			}
			continue
		}
		if _, ok := offlineHosts[host]; !ok && !seen[host] {
			seen[host] = true
			i := strings.Index(text, m[0])
			t.Errorf("%s has an absolute URL to the unreviewed host %q: …%s…", name, host, text[max(0, i-60):min(len(text), i+60)])
		}
	}
}

var (
	cssComment = regexp.MustCompile(`(?s)/\*.*?\*/`)
	cssURL     = regexp.MustCompile(`(?i)url\(\s*(["']?)([^"')]*)`)
)

// checkCSS fails on a style sheet that imports another or loads anything
// but a data: URL or a relative one (fonts, images).
func checkCSS(t *testing.T, name, css string) {
	t.Helper()
	css = cssComment.ReplaceAllString(css, "")
	if strings.Contains(strings.ToLower(css), "@import") {
		t.Errorf("%s imports another style sheet", name)
	}
	for _, m := range cssURL.FindAllStringSubmatch(css, -1) {
		u := strings.TrimSpace(m[2])
		if strings.HasPrefix(strings.ToLower(u), "data:") {
			continue
		}
		if p, err := url.Parse(u); err != nil || p.IsAbs() || p.Host != "" {
			t.Errorf("%s loads url(%s)", name, u)
		}
	}
}
