package server

import (
	"net/http"

	"github.com/swaggest/swgui"
	"github.com/swaggest/swgui/v5emb"
)

// DocsHandler serves an API browser (Swagger UI 5) for the OpenAPI document
// at specURL: its page at basePath and its assets under basePath/. Every
// asset is embedded in the binary, so the page works without network access;
// nothing is loaded from a CDN, and the online validator badge is off.
//
// Mount it on both patterns, for the page and for its assets:
//
//	mux.Handle("GET /docs", h)
//	mux.Handle("GET /docs/", h)
//
// Built with the build tag swguicdn, swgui would load the assets from a CDN
// instead: aguic is not built with it.
func DocsHandler(title, specURL, basePath string) http.Handler {
	ui := v5emb.NewHandlerWithConfig(swgui.Config{
		Title:       title,
		SwaggerJSON: specURL,
		BasePath:    basePath,
		SettingsUI: map[string]string{
			// The default sends the spec's URL to validator.swagger.io.
			"validatorUrl": "null",
			// The schemas section, collapsed.
			"defaultModelsExpandDepth": "0",
		},
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, http.StatusText(http.StatusMethodNotAllowed), http.StatusMethodNotAllowed)
			return
		}
		ui.ServeHTTP(w, r)
	})
}
