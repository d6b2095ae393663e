package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/aguic/aguic/vm/store"
)

// The SQLSTATEs that commit_v1 (and so commit_v2) raises (class AG, which PostgreSQL does
// not use), and the store errors they stand for.
var raised = map[string]error{
	"AGL01": store.ErrLeaseLost,
	"AGC01": store.ErrConflict,
	"AGR01": store.ErrRunExists,
}

// classify turns an error of pgx into the error a Store returns: one that
// wraps ctx.Err() when the caller's context is done, store.ErrUnavailable
// when the server could not be reached or did not answer in time, the
// store error that commit_v1 raised; the cause stays in the message.
func classify(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil {
		if errors.Is(err, cerr) {
			return err
		}
		return fmt.Errorf("%w (%v)", cerr, err)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		if target, ok := raised[pe.Code]; ok {
			if pe.Message == target.Error() {
				return target
			}
			return fmt.Errorf("%w: %s", target, pe.Message)
		}
		if strings.HasPrefix(pe.Code, "AG") {
			return errors.New(pe.Message)
		}
	}
	if unavailable(err) {
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	}
	return err
}

// unavailable reports whether err says that the server is out of reach:
// the connection failed or broke, the server is shutting down or starting,
// or a statement ran out of time.
func unavailable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case strings.HasPrefix(pe.Code, "08"): // connection exception
			return true
		case strings.HasPrefix(pe.Code, "57P"): // admin_shutdown, crash_shutdown, cannot_connect_now…
			return true
		case pe.Code == "57014": // query_canceled: statement_timeout (the caller's context is not done)
			return true
		case pe.Code == "55P03": // lock_not_available: lock_timeout
			return true
		case pe.Code == "53300" || pe.Code == "53400": // too_many_connections, configuration_limit_exceeded
			return true
		}
		return false
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	switch {
	case errors.As(err, &ce), errors.As(err, &ne), pgconn.Timeout(err), pgconn.SafeToRetry(err):
		return true
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	}
	// pgx's own words for a connection that broke under it.
	msg := err.Error()
	return strings.Contains(msg, "conn closed") || strings.Contains(msg, "closed pool") ||
		strings.Contains(msg, "failed to deallocate cached statement")
}

// keyName is how messages name a thread, cut short when long.
func keyName(k store.Key) string {
	name := k.Scope + "/" + k.Workflow + "/" + k.Thread
	if len(name) > 100 {
		name = strings.ToValidUTF8(name[:100], "") + "…"
	}
	return fmt.Sprintf("%q", name)
}
