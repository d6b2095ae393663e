package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
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
	wfDir := filepath.Join(dir, "workflows")
	if err := os.Mkdir(wfDir, 0o755); err != nil {
		t.Fatal(err)
	}
	src := "wf 1\n\nworkflow notes {\n  conversation = true\n  flow {\n    top: say \"noted <<$agent.latestUserMessage.content>>\"\n    wait: suspend\n    goto top\n  }\n}\n"
	if err := os.WriteFile(filepath.Join(wfDir, "notes.wf"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := startServe(t, serveOptions{
		dir: wfDir, data: filepath.Join(dir, "data"),
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
