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

type fakeBackup struct{ data string }

func (f fakeBackup) Backup(ctx context.Context, w io.Writer) error {
	if f.data == "" {
		return errors.New("broken")
	}
	_, err := io.WriteString(w, f.data)
	return err
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
	h := BackupHandler(fakeBackup{"the backup"}, "s3cret")
	if rec := get(h, http.MethodGet, "s3cret"); rec.Code != http.StatusOK || rec.Body.String() != "the backup" {
		t.Errorf("with the token: %d %q", rec.Code, rec.Body.String())
	}
	for _, token := range []string{"", "wrong", "s3cre"} {
		rec := get(h, http.MethodGet, token)
		if rec.Code != http.StatusUnauthorized || !bytes.Contains(rec.Body.Bytes(), []byte("admin token")) {
			t.Errorf("token %q: %d %s", token, rec.Code, rec.Body)
		}
	}
	if rec := get(BackupHandler(fakeBackup{"x"}, ""), http.MethodGet, ""); rec.Code != http.StatusUnauthorized {
		t.Errorf("no token configured must refuse everyone, got %d", rec.Code)
	}
	if rec := get(h, http.MethodPost, "s3cret"); rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", rec.Code)
	}
}
