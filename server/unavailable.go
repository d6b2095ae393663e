package server

import (
	"errors"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/aguic/aguic/vm/store"
)

// unavailableRetry is the Retry-After of a 503 for a store that cannot be
// reached, in seconds.
const unavailableRetry = "2"

// storeFailed is the answer to a request whose store operation failed,
// what saying which: 503 with Retry-After when the store is unavailable
// (its database is down or does not answer; the request may be sent again
// and nothing was lost), 500 otherwise.
func storeFailed(what string, err error) error {
	if errors.Is(err, store.ErrUnavailable) {
		return huma.ErrorWithHeaders(
			huma.NewError(http.StatusServiceUnavailable, what+": the store is unavailable; send the request again later", err),
			http.Header{"Retry-After": {unavailableRetry}})
	}
	return huma.Error500InternalServerError(what, err)
}

// codeUnavailable is the RUN_ERROR code of a run that stopped because the
// store became unavailable: the run is recovered once it is back.
const codeUnavailable = "store_unavailable"
