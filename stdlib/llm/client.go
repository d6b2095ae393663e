package llm

import "net/http"

// maxIdlePerHost is how many idle connections a client of NewHTTPClient
// keeps to one host: about as many as the calls it makes at once, so that
// a busy server reuses its connections to a model API instead of opening
// one (and, over TLS, shaking hands) for most calls, as the standard
// library's default of two would make it.
const maxIdlePerHost = 64

// NewHTTPClient returns a client for calls to one API, such as a model
// provider's: the standard library's default transport (proxy from the
// environment, HTTP/2, timeouts) keeping up to 64 idle connections to a
// host rather than 2.
func NewHTTPClient() *http.Client {
	t, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return &http.Client{}
	}
	t = t.Clone()
	t.MaxIdleConnsPerHost = maxIdlePerHost
	return &http.Client{Transport: t}
}
