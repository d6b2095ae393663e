package server

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

type fakeBackup struct {
	data   string
	broken bool // fail after writing data
}

func (f fakeBackup) Backup(ctx context.Context, w io.Writer) error {
	if f.data == "" {
		return errors.New("broken")
	}
	if _, err := io.WriteString(w, f.data); err != nil {
		return err
	}
	if f.broken {
		return errors.New("the disk failed")
	}
	return nil
}

// TestBackupHandlerFails: a backup that fails before it wrote anything is
// a 500; one that fails after is a broken connection, never a whole
// looking but truncated body.
func TestBackupHandlerFails(t *testing.T) {
	for _, c := range []struct {
		name   string
		backup fakeBackup
	}{
		{"at once", fakeBackup{}},
		{"half way", fakeBackup{data: "the first half", broken: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(BackupHandler(c.backup, "s3cret"))
			defer srv.Close()
			req, _ := http.NewRequest(http.MethodGet, srv.URL+BackupPath, nil)
			req.Header.Set("Authorization", "Bearer s3cret")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				if !c.backup.broken {
					t.Fatal(err)
				}
				return // broken before the buffered start of the body went out
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if c.backup.broken {
				if err == nil {
					t.Errorf("status %d, body %q: want a body cut short", resp.StatusCode, body)
				}
				return
			}
			if resp.StatusCode != http.StatusInternalServerError || !bytes.Contains(body, []byte("the backup failed: broken")) {
				t.Errorf("status %d, body %s: want 500 with the reason", resp.StatusCode, body)
			}
		})
	}
}

func TestBackupHandler(t *testing.T) {
	get := func(h http.Handler, method, token string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, BackupPath, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	h := BackupHandler(fakeBackup{data: "the backup"}, "s3cret")
	if rec := get(h, http.MethodGet, "s3cret"); rec.Code != http.StatusOK || rec.Body.String() != "the backup" {
		t.Errorf("with the token: %d %q", rec.Code, rec.Body.String())
	}
	for _, token := range []string{"", "wrong", "s3cre"} {
		rec := get(h, http.MethodGet, token)
		if rec.Code != http.StatusUnauthorized || !bytes.Contains(rec.Body.Bytes(), []byte("admin token")) {
			t.Errorf("token %q: %d %s", token, rec.Code, rec.Body)
		}
	}
	if rec := get(BackupHandler(fakeBackup{data: "x"}, ""), http.MethodGet, ""); rec.Code != http.StatusUnauthorized {
		t.Errorf("no token configured must refuse everyone, got %d", rec.Code)
	}
	if rec := get(h, http.MethodPost, "s3cret"); rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", rec.Code)
	}
}
