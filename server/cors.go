package server

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// The answers to a CORS preflight request.
const (
	corsMethods = "GET, POST, DELETE, OPTIONS" // DELETE ends an MCP session
	corsHeaders = "Content-Type, Authorization, Accept, Last-Event-ID, Mcp-Session-Id, Mcp-Protocol-Version, Mcp-Method, Mcp-Name"
	corsExpose  = "Mcp-Session-Id" // an MCP client reads its session's id
	corsMaxAge  = 600              // seconds a browser may keep a preflight's answer
)

// cors lets browser clients of other origins call the server.
type cors struct {
	any     bool            // "*": every origin
	origins map[string]bool // the allowed origins, lower-case
	headers string          // the request headers a client may send
}

// newCORS reads the allowed origins: "*", or origins such as
// https://app.example.com or http://localhost:3000. None: nil, CORS off.
func newCORS(origins []string, scopeHeader string) (*cors, error) {
	c := &cors{origins: map[string]bool{}, headers: corsHeaders}
	for _, o := range origins {
		o = strings.TrimSpace(o)
		switch o {
		case "":
			continue
		case "*":
			c.any = true
			continue
		}
		norm, err := origin(o)
		if err != nil {
			return nil, fmt.Errorf("CORS %w", err)
		}
		c.origins[norm] = true
	}
	if !c.any && len(c.origins) == 0 {
		return nil, nil
	}
	if scopeHeader != "" {
		c.headers += ", " + http.CanonicalHeaderKey(scopeHeader)
	}
	return c, nil
}

// CheckOrigin reports whether o may be one of Config.CORSOrigins: "*",
// or an origin such as https://app.example.com or http://localhost:3000
// (a final slash is left out).
func CheckOrigin(o string) error {
	if o == "*" {
		return nil
	}
	_, err := origin(o)
	return err
}

// origin checks and normalizes an allowed origin: scheme://host[:port],
// lower-case, without a path.
func origin(o string) (string, error) {
	u, err := url.Parse(strings.TrimSuffix(o, "/"))
	if err != nil || u.Scheme == "" || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("origin %q: expected \"*\" or scheme://host[:port], such as https://app.example.com", o)
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), nil
}

// allows reports whether requests from origin o may read the answers.
func (c *cors) allows(o string) bool {
	return o != "" && (c.any || c.origins[strings.ToLower(o)])
}

// wrap answers preflight requests and marks the answers to allowed
// origins; without an Origin header a request passes untouched. The
// headers are set before next runs, so streamed answers carry them too.
func (c *cors) wrap(next http.Handler) http.Handler {
	if c == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Add("Vary", "Origin")
		o := r.Header.Get("Origin")
		if o == "" {
			next.ServeHTTP(w, r)
			return
		}
		allowed := c.allows(o)
		if allowed {
			if c.any {
				h.Set("Access-Control-Allow-Origin", "*")
			} else {
				h.Set("Access-Control-Allow-Origin", o)
			}
			h.Set("Access-Control-Expose-Headers", corsExpose)
		}
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			if !allowed {
				problem(w, http.StatusForbidden, fmt.Sprintf("origin %q may not call this server", o))
				return
			}
			h.Set("Access-Control-Allow-Methods", corsMethods)
			h.Set("Access-Control-Allow-Headers", c.headers)
			h.Set("Access-Control-Max-Age", strconv.Itoa(corsMaxAge))
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}
