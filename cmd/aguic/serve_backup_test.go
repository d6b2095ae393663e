package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aguic/aguic/vm/store"
)

// TestOnlineBackup takes a backup from a running server with aguic backup
// --from, restores it into a new directory, and finds the thread there;
// without the admin token the server refuses.
func TestOnlineBackup(t *testing.T) {
	dir := t.TempDir()
	wfDir := writeWorkflow(t, dir, "notes.wf", "wf 1\n\nworkflow notes {\n  conversation = true\n  flow {\n    top: say \"noted <<$agent.latestUserMessage.content>>\"\n    wait: suspend\n    goto top\n  }\n}\n")
	srv := startServe(t, serveOptions{
		dir: wfDir, where: where{data: filepath.Join(dir, "data")},
		basePath: "/agui", deadline: -1, adminToken: "s3cret",
	})
	url := srv.url
	resp, err := http.Post(url+"/agui/workflows/notes", "application/json", strings.NewReader(`{"threadId": "t1", "runId": "r1", "messages": [{"id": "m1", "role": "user", "content": "milk"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	backup := filepath.Join(dir, "backup.bin")
	var out, errOut bytes.Buffer
	if c := run([]string{"backup", "--from", url + "/agui", "--token", "wrong", backup}, strings.NewReader(""), &out, &errOut); c == exitOK || !strings.Contains(errOut.String(), "admin token") {
		t.Errorf("a wrong token: exit %d, %s", c, errOut.String())
	}
	errOut.Reset()
	if c := run([]string{"backup", "--from", url + "/agui", "--token", "s3cret", backup}, strings.NewReader(""), &out, &errOut); c != exitOK {
		t.Fatalf("backup --from: exit %d, %s", c, errOut.String())
	}
	if c := srv.stop(); c != exitOK {
		t.Fatalf("serve exited with %d: %s", c, srv.stderr.String())
	}

	restored := filepath.Join(dir, "restored")
	if c := run([]string{"restore", "--data", restored, backup}, strings.NewReader(""), &out, &errOut); c != exitOK {
		t.Fatalf("restore: exit %d, %s", c, errOut.String())
	}
	st, err := openData(restored)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	key := store.Key{Scope: "default", Workflow: "notes", Thread: "t1"}
	th, err := st.Thread(context.Background(), key)
	if err != nil || th.Status != store.Suspended || th.LastSeq == 0 {
		t.Fatalf("the restored thread: %+v, %v", th, err)
	}
	evs, err := st.Events(context.Background(), key, 0, 100)
	if err != nil || !bytes.Contains(evs[1].Data, []byte("noted milk")) {
		t.Errorf("the restored events: %v", err)
	}
}

// TestBackupFailureKeepsTheFile: a backup --from that fails (a wrong
// token, a server that cannot be reached, a download cut in the middle, a
// URL that answers 200 with something that is not a backup) leaves the
// file it would have replaced as it was, and nothing beside it; one that
// succeeds replaces it.
func TestBackupFailureKeepsTheFile(t *testing.T) {
	dir := t.TempDir()
	wfDir := writeWorkflow(t, dir, "hello.wf", "wf 1\n\nworkflow hello {\n  flow { say \"hello\" }\n}\n")
	srv := startServe(t, serveOptions{
		dir: wfDir, where: where{data: filepath.Join(dir, "data")},
		basePath: "/agui", deadline: -1, adminToken: "s3cret",
	})
	// A server that starts a backup and breaks off.
	cut := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", "4096")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "aguic-backup partial")
	}))
	defer cut.Close()
	// A server that answers every path with its home page.
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<!doctype html><title>home</title>")
	}))
	defer page.Close()
	unreachable := httptest.NewServer(http.NotFoundHandler())
	unreachable.Close()

	outDir := filepath.Join(dir, "out")
	if err := os.Mkdir(outDir, 0o755); err != nil {
		t.Fatal(err)
	}
	backup := filepath.Join(outDir, "backup.bin")
	const old = "the previous backup"
	if err := os.WriteFile(backup, []byte(old), 0o640); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, url, token, want string }{
		{"a wrong token", srv.url + "/agui", "wrong", "admin token"},
		{"an unreachable server", unreachable.URL + "/agui", "s3cret", "connection refused"},
		{"a download cut short", cut.URL + "/agui", "s3cret", "unexpected EOF"},
		{"a page that is not a backup", page.URL, "s3cret", `the answer is "text/html; charset=utf-8", not a backup`},
	} {
		var out, errOut bytes.Buffer
		if c := run([]string{"backup", "--from", tt.url, "--token", tt.token, backup}, strings.NewReader(""), &out, &errOut); c != exitFound || !strings.Contains(errOut.String(), tt.want) {
			t.Errorf("%s: exit %d, %q; want %d and %q", tt.name, c, errOut.String(), exitFound, tt.want)
		}
		if got, err := os.ReadFile(backup); err != nil || string(got) != old {
			t.Errorf("%s: the file holds %q (%v), want %q", tt.name, got, err, old)
		}
		if names := dirNames(t, outDir); len(names) != 1 {
			t.Errorf("%s: the directory holds %q, want the backup only", tt.name, names)
		}
	}

	var out, errOut bytes.Buffer
	if c := run([]string{"backup", "--from", srv.url + "/agui", "--token", "s3cret", backup}, strings.NewReader(""), &out, &errOut); c != exitOK {
		t.Fatalf("backup --from: exit %d, %s", c, errOut.String())
	}
	got, err := os.ReadFile(backup)
	if err != nil || !strings.HasPrefix(string(got), "aguic") || len(got) <= len(old) {
		t.Errorf("the backup was not replaced: %q, %v", got, err)
	}
	if fi, err := os.Stat(backup); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("the replaced backup's mode: %v, %v; want -rw-r-----", fi.Mode(), err)
	}
	if names := dirNames(t, outDir); len(names) != 1 {
		t.Errorf("the directory holds %q, want the backup only", names)
	}
}

// dirNames lists the names in dir.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
