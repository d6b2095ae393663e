package studio_test

import (
	"bytes"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/aguic/aguic/studio"
)

func newHandler(t *testing.T) http.Handler {
	t.Helper()
	h, err := studio.Handler("/agui")
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func serve(h http.Handler, method, target string, header ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// webFiles are the files of web/, by their path under it.
func webFiles(t *testing.T) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := fs.WalkDir(os.DirFS("web"), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files[name], err = os.ReadFile(path.Join("web", name))
		return err
	})
	if err != nil || len(files) == 0 {
		t.Fatalf("reading web/: %d files, %v", len(files), err)
	}
	return files
}

// TestFiles serves every file of web/: its type, the cache headers and
// the Content-Security-Policy; a revalidation with the ETag is a 304; a
// path that names no file is a 404.
func TestFiles(t *testing.T) {
	h := newHandler(t)
	types := map[string]string{".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8", ".html": "text/html; charset=utf-8", ".svg": "image/svg+xml"}
	for name, body := range webFiles(t) {
		rec := serve(h, http.MethodGet, studio.Path+"/"+name)
		if rec.Code != http.StatusOK {
			t.Errorf("%s: status %d", name, rec.Code)
			continue
		}
		want, ok := types[path.Ext(name)]
		if !ok {
			t.Errorf("%s: a file of a type the studio does not serve", name)
		}
		if ct := rec.Header().Get("Content-Type"); ct != want {
			t.Errorf("%s: Content-Type %q, want %q", name, ct, want)
		}
		if name != "index.html" && !bytes.Equal(rec.Body.Bytes(), body) {
			t.Errorf("%s: the body is not the file's", name)
		}
		etag := rec.Header().Get("ETag")
		if !regexp.MustCompile(`^"[0-9a-f]{32}"$`).MatchString(etag) || rec.Header().Get("Cache-Control") != "no-cache" {
			t.Errorf("%s: ETag %q, Cache-Control %q", name, etag, rec.Header().Get("Cache-Control"))
		}
		if csp := rec.Header().Get("Content-Security-Policy"); csp != studio.CSP {
			t.Errorf("%s: Content-Security-Policy %q", name, csp)
		}
		if again := serve(h, http.MethodGet, studio.Path+"/"+name, "If-None-Match", etag); again.Code != http.StatusNotModified {
			t.Errorf("%s: revalidated with its ETag: status %d, want 304", name, again.Code)
		}
	}
	for _, p := range []string{studio.Path, studio.Path + "/"} {
		rec := serve(h, http.MethodGet, p)
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `<meta name="aguic-base-path" content="/agui">`) {
			t.Errorf("GET %s: %d\n%s", p, rec.Code, rec.Body)
		}
	}
	for _, p := range []string{studio.Path + "/nope.js", studio.Path + "/js", studio.Path + "/js/", studio.Path + "/js/../style.css", studio.Path + "//style.css"} {
		if rec := serve(h, http.MethodGet, p); rec.Code != http.StatusNotFound {
			t.Errorf("GET %s: status %d, want 404", p, rec.Code)
		}
	}
	if rec := serve(h, http.MethodPost, studio.Path); rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("POST: status %d, Allow %q", rec.Code, rec.Header().Get("Allow"))
	}
	if rec := serve(h, http.MethodHead, studio.Path+"/style.css"); rec.Code != http.StatusOK || rec.Body.Len() != 0 {
		t.Errorf("HEAD: status %d, %d bytes", rec.Code, rec.Body.Len())
	}
}

// TestBasePath: the page names the base path it is given, escaped.
func TestBasePath(t *testing.T) {
	h, err := studio.Handler(`/a"b`)
	if err != nil {
		t.Fatal(err)
	}
	if body := serve(h, http.MethodGet, studio.Path).Body.String(); !strings.Contains(body, `content="/a&#34;b"`) {
		t.Errorf("the base path is not in the page, escaped:\n%s", body)
	}
}

// TestOffline: the page loads its own files only, with no inline script
// or style (the CSP would refuse them), and no file names another origin.
func TestOffline(t *testing.T) {
	files := webFiles(t)
	z := html.NewTokenizer(bytes.NewReader(files["index.html"]))
	inside := ""
	for tt := z.Next(); tt != html.ErrorToken; tt = z.Next() {
		tok := z.Token()
		switch tt {
		case html.StartTagToken, html.SelfClosingTagToken:
			inside = tok.Data
			for _, a := range tok.Attr {
				switch {
				case a.Key == "style" || strings.HasPrefix(a.Key, "on"):
					t.Errorf("index.html: inline %s=%q", a.Key, a.Val)
				case a.Key == "src" || a.Key == "href" && tok.Data != "a":
					if !strings.HasPrefix(a.Val, studio.Path+"/") || files[strings.TrimPrefix(a.Val, studio.Path+"/")] == nil {
						t.Errorf("index.html: %s=%q is not a file of the studio", a.Key, a.Val)
					}
				}
			}
			if tok.Data == "style" {
				t.Error("index.html: an inline <style>")
			}
		case html.TextToken:
			if inside == "script" && strings.TrimSpace(tok.Data) != "" {
				t.Errorf("index.html: an inline script: %q", tok.Data)
			}
		case html.EndTagToken:
			inside = ""
		}
	}
	origin := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	for name, body := range files {
		for _, m := range origin.FindAllString(string(body), -1) {
			if m != "http://www.w3.org" { // the SVG namespace, loaded from nowhere
				t.Errorf("%s names another origin: %s", name, m)
			}
		}
	}
}

// TestModules: every import of a module names a file of the studio, and
// every module is imported, from the page's entry on.
func TestModules(t *testing.T) {
	files := webFiles(t)
	imports := regexp.MustCompile(`(?m)^\s*(?:import|export)\s[^;]*?from\s+"([^"]+)"|^\s*import\s+"([^"]+)"`)
	reached := map[string]bool{}
	var visit func(name string)
	visit = func(name string) {
		if reached[name] {
			return
		}
		reached[name] = true
		for _, m := range imports.FindAllStringSubmatch(string(files[name]), -1) {
			spec := m[1] + m[2]
			if !strings.HasPrefix(spec, "./") && !strings.HasPrefix(spec, "../") {
				t.Errorf("%s imports %q: only relative imports of the studio's own modules", name, spec)
				continue
			}
			target := path.Join(path.Dir(name), spec)
			if files[target] == nil {
				t.Errorf("%s imports %q: there is no %s", name, spec, target)
				continue
			}
			visit(target)
		}
	}
	visit("js/app.js")
	for name := range files {
		if path.Ext(name) == ".js" && !reached[name] {
			t.Errorf("%s: no module imports it", name)
		}
	}
}
