package mcpclient

import (
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpTransport is the streamable HTTP transport to c's URL, sending c's
// headers with every request.
func httpTransport(c *config) *mcp.StreamableClientTransport {
	var rt http.RoundTripper = http.DefaultTransport
	if len(c.Headers) > 0 {
		rt = headerTransport{base: rt, headers: c.Headers}
	}
	return &mcp.StreamableClientTransport{
		Endpoint:   c.URL,
		HTTPClient: &http.Client{Transport: rt},
	}
}

// headerTransport adds headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

// RoundTrip sends a copy of req with the headers set.
func (t headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	return t.base.RoundTrip(req)
}
