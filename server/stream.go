package server

import (
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"

	"github.com/aguic/aguic/server/agui"
)

// stream is the response that streams r's frames as server-sent events
// until its terminal frame, or until the client goes away (the run goes
// on without it).
func (s *Server) stream(r *run) *huma.StreamResponse { return s.streamAfter(r, 0, false) }

// streamAfter is stream, without the stored events up to the cursor after
// (a client that reconnects has them), with the frames of the node
// lifecycle when nodes is set.
func (s *Server) streamAfter(r *run, after uint64, nodes bool) *huma.StreamResponse {
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
				if f.seq != 0 && f.seq <= after || f.node && !nodes {
					continue
				}
				if sw.WriteData(f.seq, f.data) != nil {
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
