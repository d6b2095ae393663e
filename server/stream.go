package server

import (
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"

	"github.com/aguic/aguic/server/agui"
)

// stream is the response that streams r's frames as server-sent events,
// in the dialect d of the request, until its terminal frame, or until the
// client goes away (the run goes on without it). Every stream sends its
// events through here, in its own dialect: the frames of a run may go to
// streams of several.
func (s *Server) stream(r *run, d agui.Dialect) *huma.StreamResponse {
	return s.streamAfter(r, 0, d)
}

// streamAfter is stream, without the stored events up to the cursor after
// (a client that reconnects has them).
func (s *Server) streamAfter(r *run, after uint64, d agui.Dialect) *huma.StreamResponse {
	return &huma.StreamResponse{Body: func(ctx huma.Context) {
		req, w := humago.Unwrap(ctx)
		agui.SSEHeaders(w.Header())
		ctx.SetStatus(http.StatusOK)
		rc := http.NewResponseController(w)
		// A stream may outlast any write timeout of the http.Server.
		_ = rc.SetWriteDeadline(time.Time{})
		// The frames that are ready go out together, in one flush, the
		// headers with the first of them.
		sw := agui.NewSSEWriter(w, nil)
		tick := time.NewTicker(s.cfg.KeepAlive)
		defer tick.Stop()
		for i := 0; ; {
			frames, ended, wake := r.next(i)
			for _, f := range frames {
				if f.seq != 0 && f.seq <= after {
					continue
				}
				data, ok := f.enc.In(d)
				if !ok {
					continue
				}
				if sw.WriteData(f.seq, data) != nil {
					return
				}
			}
			if ended {
				// The server flushes the last frames with the end of
				// the response.
				return
			}
			if len(frames) > 0 && rc.Flush() != nil {
				return
			}
			i += len(frames)
			select {
			case <-wake:
			case <-req.Context().Done():
				return
			case <-tick.C:
				if sw.Ping() != nil || rc.Flush() != nil {
					return
				}
			}
		}
	}}
}

// dialectOf is the dialect of a stream a route other than a run request
// sends (replay, follow, history), as its protocolVersion parameter asks:
// AG-UI 1.0 when it has none, since no client before 1.0 sends these
// requests; else as for a run request (agui.DialectOf).
func dialectOf(protocolVersion string) agui.Dialect {
	if protocolVersion == "" {
		return agui.V1
	}
	return agui.DialectOf(protocolVersion)
}
