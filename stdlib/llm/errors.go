package llm

import (
	"errors"
	"fmt"
	"io"
	"net/url"
)

// Retryable is implemented by provider errors that say whether the same
// request may succeed when tried again: a rate limit or an overloaded
// server, as opposed to a bad request.
type Retryable interface {
	error
	Retryable() bool
}

// IsRetryable reports whether err, or an error it wraps, is a Retryable
// error that says yes.
func IsRetryable(err error) bool {
	var r Retryable
	return errors.As(err, &r) && r.Retryable()
}

// StatusError is a failing HTTP status of a model API. Providers return it
// so that callers can tell a rate limit (429) or a server error (5xx),
// which are worth another try, from a bad request.
type StatusError struct {
	StatusCode int
	Message    string
}

// Error says the status and the API's message.
func (e *StatusError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("model API status %d", e.StatusCode)
	}
	return fmt.Sprintf("model API status %d: %s", e.StatusCode, e.Message)
}

// Retryable reports whether the status is 429 or 5xx.
func (e *StatusError) Retryable() bool {
	return e.StatusCode == 429 || e.StatusCode >= 500
}

// ConnectionError is a connection to a model API that failed: it could
// not be made, or it closed before the answer was complete. Like a 5xx, it
// is worth another try; the model node tries again only while nothing of
// the answer has reached the client.
type ConnectionError struct {
	Provider string // "openai"
	Err      error
	Broken   bool // the connection closed in the middle of the answer
}

// Error says which API failed, how, and the error of the connection.
func (e *ConnectionError) Error() string {
	if e.Broken {
		return fmt.Sprintf("%s: the connection closed in the middle of the answer: %v", e.Provider, e.Err)
	}
	return fmt.Sprintf("%s: the model API cannot be reached: %v", e.Provider, e.Err)
}

// Unwrap returns the error of the connection.
func (e *ConnectionError) Unwrap() error { return e.Err }

// Retryable reports true.
func (e *ConnectionError) Retryable() bool { return true }

// connectionError returns err as a *ConnectionError when it is the failure
// of a connection: a body that ended in the middle (io.ErrUnexpectedEOF),
// or an HTTP request that got no response; nil otherwise.
func connectionError(provider string, err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return &ConnectionError{Provider: provider, Err: err, Broken: true}
	}
	var uerr *url.Error
	if errors.As(err, &uerr) && !uerr.Timeout() {
		return &ConnectionError{Provider: provider, Err: uerr.Err}
	}
	return nil
}
