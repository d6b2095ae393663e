// Package studio serves the studio: a web UI, built into the binary, to see
// the workflows a server serves, run them, answer their frontend tools and
// interrupts, and step through the event logs of their threads.
//
// What goes in: the base path of the AG-UI routes. What comes out: an
// http.Handler for the paths under Path, which serves the page (at Path
// and Path/) and its static files (plain ES modules, CSS, an icon)
// embedded from web/. The page talks to the AG-UI routes with the
// credentials of the browser's user; the handler itself serves only the
// files, the same for everyone, so it needs no authentication.
//
// What stays true: nothing is loaded from elsewhere (every answer carries
// a Content-Security-Policy of default-src 'self' without inline
// scripts); each file has an ETag of its content's hash and Cache-Control
// no-cache, so a browser revalidates, and a new binary is picked up at
// the next load; a path that names no file is a 404.
package studio

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

// Path is where the studio is mounted: the page at Path and Path+"/", its
// files under Path+"/".
const Path = "/studio"

// CSP is the Content-Security-Policy of every answer of the studio: its
// own files only, no inline script or style, no frames, no form posts.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

//go:embed web
var web embed.FS

// file is one file the studio serves.
type file struct {
	body  []byte
	etag  string
	ctype string
}

// Handler serves the studio for a server whose AG-UI routes start at
// basePath (such as "/agui"), which the page learns from a meta tag of
// its HTML. Mount it for GET on Path and Path+"/".
func Handler(basePath string) (http.Handler, error) {
	files := map[string]*file{}
	err := fs.WalkDir(web, "web", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := web.ReadFile(name)
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(name, "web/")
		if rel == "index.html" {
			if body, err = page(body, basePath); err != nil {
				return err
			}
		}
		files[rel] = newFile(rel, body)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("studio: %w", err)
	}
	return &handler{files: files}, nil
}

// page fills the base path into the HTML of the page.
func page(text []byte, basePath string) ([]byte, error) {
	t, err := template.New("index.html").Parse(string(text))
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, struct{ BasePath string }{basePath}); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func newFile(name string, body []byte) *file {
	sum := sha256.Sum256(body)
	ctype := mime.TypeByExtension(path.Ext(name))
	switch path.Ext(name) {
	case ".js":
		ctype = "text/javascript; charset=utf-8"
	case ".css":
		ctype = "text/css; charset=utf-8"
	case ".html":
		ctype = "text/html; charset=utf-8"
	case ".svg":
		ctype = "image/svg+xml"
	}
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	return &file{body: body, etag: `"` + hex.EncodeToString(sum[:16]) + `"`, ctype: ctype}
}

type handler struct {
	files map[string]*file
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", CSP)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hd.Set("Allow", "GET, HEAD")
		http.Error(w, http.StatusText(http.StatusMethodNotAllowed), http.StatusMethodNotAllowed)
		return
	}
	name := "index.html"
	if p := r.URL.Path; p != Path && p != Path+"/" {
		name = strings.TrimPrefix(p, Path+"/")
	}
	f := h.files[name]
	if f == nil || name != path.Clean(name) {
		http.NotFound(w, r)
		return
	}
	hd.Set("Content-Type", f.ctype)
	hd.Set("ETag", f.etag)
	hd.Set("Cache-Control", "no-cache")
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(f.body))
}
