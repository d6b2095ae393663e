package server

import (
	"bytes"
	"html/template"
	"net/http"
)

// homeCSP is the Content-Security-Policy of the home page: it loads
// nothing.
const homeCSP = "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

var homePage = template.Must(template.New("home").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>aguic</title>
</head>
<body>
<h1>aguic</h1>
<p>This server serves workflows as AG-UI agents.</p>
<ul>
{{- if .Studio}}
<li><a href="/studio">Studio</a>: see the workflows, run them and step through their threads</li>
{{- end}}
<li><a href="/docs">API browser</a>: every route, to read and try</li>
<li><a href="/openapi.json">OpenAPI document</a> (<a href="/openapi.yaml">YAML</a>)</li>
</ul>
</body>
</html>
`))

// home answers GET /: a page of links to what a browser opens here. It
// names no workflow or thread, so it needs no token.
func home(withStudio bool) http.Handler {
	var b bytes.Buffer
	homePage.Execute(&b, struct{ Studio bool }{withStudio})
	body := b.Bytes()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", homeCSP)
		w.Write(body)
	})
}
