package server

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// Backuper writes a consistent backup of a store while it is in use.
type Backuper interface {
	Backup(ctx context.Context, w io.Writer) error
}

// BackupPath is where the server serves backups, under its base path.
const BackupPath = "/admin/backup"

// BackupHandler serves an online backup of b to requests that carry the
// admin token as a bearer token (GET, application/octet-stream). Without a
// token configured there is no way in: every request is refused, so a
// backup never leaks by default.
func BackupHandler(b Backuper, token string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			problem(w, http.StatusMethodNotAllowed, "use GET to download a backup")
			return
		}
		given, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if token == "" || !ok || subtle.ConstantTimeCompare([]byte(given), []byte(token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="aguic admin"`)
			problem(w, http.StatusUnauthorized, "a backup needs the admin token (aguic serve --admin-token) as a bearer token")
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", `attachment; filename="aguic.backup"`)
		cw := &countingWriter{w: w}
		if err := b.Backup(r.Context(), cw); err != nil {
			if cw.n == 0 {
				problem(w, http.StatusInternalServerError, "the backup failed: "+err.Error())
				return
			}
			// Part of the backup is sent under a 200: break the connection
			// before the body's end, so that the client sees it cut short
			// rather than a whole but truncated backup.
			panic(http.ErrAbortHandler)
		}
	})
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// problem writes an RFC 9457 problem document, as huma's errors are.
func problem(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"title": http.StatusText(status), "status": status, "detail": detail})
}
