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
		if err := b.Backup(r.Context(), w); err != nil {
			// The status is sent; the client sees a cut-short body, which
			// restore refuses.
			return
		}
	})
}

// problem writes an RFC 9457 problem document, as huma's errors are.
func problem(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"title": http.StatusText(status), "status": status, "detail": detail})
}
