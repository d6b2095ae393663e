package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/aguic/aguic/studio"
)

// maxScope is the longest scope a scope header may name.
const maxScope = 256

// requestInfo is what the server's handler learned of a request before
// its route saw it: its tenancy scope, and its headers for the hook.
type requestInfo struct {
	scope  string
	header http.Header
	user   map[string]any // who asks: {id, …} when the request was authenticated as someone, else nil
}

// Identity is who a request comes from, as Config.Auth found it.
type Identity struct {
	// ID is the user: the scope of the request's threads, and $user.id.
	// "" is nobody: the scope "default", and $user nil.
	ID string
	// Claims are the claims of the user's token the operator selected,
	// $user.claims; nil for none. They are stored with the threads the
	// user's runs write: never a token, only what workflows need.
	Claims map[string]any
}

// user is $user of id: {id} and, when it has some, {claims}; nil for
// nobody.
func (id Identity) user() map[string]any {
	if id.ID == "" {
		return nil
	}
	u := map[string]any{"id": id.ID}
	if len(id.Claims) > 0 {
		u["claims"] = id.Claims
	}
	return u
}

// TokenError is Auth's refusal of a bearer token that is not valid
// (RFC 6750's invalid_token): the answer is 401 with a challenge that
// carries error="invalid_token" and Reason as its description. Reason
// says what is wrong with the token and never quotes it.
type TokenError struct {
	Reason string
}

func (e *TokenError) Error() string { return e.Reason }

type requestKey struct{}

// scopeOf is the tenancy scope of the request ctx belongs to: "default"
// when the request did not pass the server's handler.
func scopeOf(ctx context.Context) string {
	if ri, _ := ctx.Value(requestKey{}).(*requestInfo); ri != nil {
		return ri.scope
	}
	return defaultScope
}

// userOf is who the request ctx belongs to asks as, {id, …}, or nil when
// it was not authenticated as anyone.
func userOf(ctx context.Context) map[string]any {
	if ri, _ := ctx.Value(requestKey{}).(*requestInfo); ri != nil {
		return ri.user
	}
	return nil
}

// headersOf is a copy of the headers of the request ctx belongs to.
func headersOf(ctx context.Context) http.Header {
	if ri, _ := ctx.Value(requestKey{}).(*requestInfo); ri != nil {
		return ri.header.Clone()
	}
	return http.Header{}
}

// public reports whether path is served without authentication: the
// health check, the OpenAPI document, the API browser, the home page and,
// when it is served, the studio's files. Each is the same for every
// caller and holds no thread.
func public(path string, withStudio bool) bool {
	return path == "/healthz" || path == "/" ||
		strings.HasPrefix(path, "/openapi.") || strings.HasPrefix(path, "/openapi-") ||
		path == "/docs" || strings.HasPrefix(path, "/docs/") ||
		withStudio && (path == studio.Path || strings.HasPrefix(path, studio.Path+"/"))
}

// publicRequest reports whether r asks for a public path, written
// plainly: a path with dot segments, doubled or escaped slashes is never
// public (the mux would only redirect it).
func (s *Server) publicRequest(r *http.Request) bool {
	p := r.URL.Path
	return r.URL.RawPath == "" && !strings.Contains(p, "//") && !strings.Contains(p, "/.") &&
		(public(p, s.cfg.Studio) || s.cfg.MetricsPublic && p == metricsPath)
}

// identify wraps next: it authenticates every request but those of the
// public paths (401 before anything else sees it), and gives the request
// its scope: the identity's with Auth, else the scope header's, else
// "default".
func (s *Server) identify(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scope := defaultScope
		var user map[string]any
		switch {
		case s.cfg.Auth != nil:
			if s.publicRequest(r) {
				break
			}
			id, err := s.cfg.Auth(r)
			if err != nil {
				s.refuse(w, r, err)
				return
			}
			if id.ID != "" {
				scope, user = id.ID, id.user()
			}
		case s.cfg.ScopeHeader != "":
			v := strings.TrimSpace(r.Header.Get(s.cfg.ScopeHeader))
			if v == "" {
				break
			}
			if err := checkScope(v); err != nil {
				problem(w, http.StatusBadRequest, fmt.Sprintf("header %s: %v", s.cfg.ScopeHeader, err))
				return
			}
			scope = v
		}
		ctx := context.WithValue(r.Context(), requestKey{}, &requestInfo{scope: scope, header: r.Header, user: user})
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// refuse answers a request Auth refused: 401 with a bearer challenge
// (error="invalid_token" for a TokenError), or the status of a
// huma.StatusError the error wraps.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, err error) {
	status := http.StatusUnauthorized
	var se huma.StatusError
	if errors.As(err, &se) && se.GetStatus() >= 400 {
		status = se.GetStatus()
	}
	if status == http.StatusUnauthorized {
		challenge := `Bearer realm="aguic"`
		var te *TokenError
		if errors.As(err, &te) {
			challenge += `, error="invalid_token", error_description="` + challengeText(te.Reason) + `"`
		}
		w.Header().Set("WWW-Authenticate", challenge)
	}
	s.log.Debug("request refused", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr, "status", status, "error", err.Error())
	problem(w, status, err.Error())
}

// challengeText is s as the quoted string of a challenge's parameter
// may hold it (RFC 6750: printable ASCII but " and \).
func challengeText(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			b[i] = '\''
		}
	}
	return string(b)
}

// checkScope accepts a scope a header names: printable ASCII, at most
// maxScope bytes.
func checkScope(v string) error {
	if len(v) > maxScope {
		return fmt.Errorf("the scope is longer than %d bytes", maxScope)
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c > 0x7e {
			return fmt.Errorf("the scope must be printable ASCII, found byte %#x", c)
		}
	}
	return nil
}

// secure documents Auth in the OpenAPI document: a bearer scheme, and on
// every operation under the base path its requirement and the 401 answer.
func (s *Server) secure(oapi *huma.OpenAPI, op *huma.Operation) {
	if s.cfg.Auth == nil || public(op.Path, s.cfg.Studio) {
		return
	}
	if oapi.Components.SecuritySchemes == nil {
		oapi.Components.SecuritySchemes = map[string]*huma.SecurityScheme{}
	}
	if oapi.Components.SecuritySchemes["bearer"] == nil {
		oapi.Components.SecuritySchemes["bearer"] = &huma.SecurityScheme{
			Type:        "http",
			Scheme:      "bearer",
			Description: "A bearer token: its identity is the scope of the threads the request may see.",
		}
	}
	op.Security = []map[string][]string{{"bearer": {}}}
	if op.Responses == nil || op.Responses["401"] != nil {
		return
	}
	for _, code := range []string{"400", "404", "default"} {
		if r := op.Responses[code]; r != nil && r.Content["application/problem+json"] != nil {
			op.Responses["401"] = &huma.Response{
				Description: http.StatusText(http.StatusUnauthorized),
				Content:     r.Content,
			}
			return
		}
	}
}
