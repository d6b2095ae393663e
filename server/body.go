package server

import (
	"errors"
	"net"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
)

// humaReadFailed is the message of the 500 Huma answers when it cannot
// read a request body to its end.
const humaReadFailed = "cannot read request body"

// A body that cannot be read to its end (shorter than its Content-Length,
// in broken chunked encoding, cut off with its connection) is the
// client's fault: it is answered 400 with the reason, not Huma's 500. A
// body that is too slow stays Huma's 408.
func init() {
	next := huma.NewErrorWithContext
	huma.NewErrorWithContext = func(ctx huma.Context, status int, msg string, errs ...error) huma.StatusError {
		if status == http.StatusInternalServerError && msg == humaReadFailed {
			return next(ctx, http.StatusBadRequest, "the request body could not be read: "+readFailure(errs))
		}
		return next(ctx, status, msg, errs...)
	}
}

// readFailure says why a body could not be read, without the addresses
// of a network error.
func readFailure(errs []error) string {
	for _, err := range errs {
		if err == nil {
			continue
		}
		var op *net.OpError
		if errors.As(err, &op) && op.Err != nil {
			return op.Err.Error()
		}
		return err.Error()
	}
	return "it ended early"
}
