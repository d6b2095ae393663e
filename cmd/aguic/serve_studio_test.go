package main

import (
	"flag"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeStudio: the studio is on by default, its URL is in the
// start-up log, and --studio=false removes its routes.
func TestServeStudio(t *testing.T) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	serveCommand().flags(fs)
	if f := fs.Lookup("studio"); f == nil || f.DefValue != "true" {
		t.Fatalf("the flag --studio: %+v, want one that is true by default", f)
	}
	dir := t.TempDir()
	wfDir := writeWorkflow(t, dir, "hello.wf", "wf 1\n\nworkflow hello {\n  flow { say \"hello\" }\n}\n")
	for _, on := range []bool{true, false} {
		srv := startServe(t, serveOptions{dir: wfDir, where: where{data: filepath.Join(dir, "data", map[bool]string{true: "on", false: "off"}[on])}, basePath: "/agui", deadline: -1, studio: on})
		resp, err := http.Get(srv.url + "/studio")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := map[bool]int{true: http.StatusOK, false: http.StatusNotFound}[on]
		if resp.StatusCode != want {
			t.Errorf("studio %v: GET /studio: %d, want %d: %s", on, resp.StatusCode, want, body)
		}
		srv.stop()
		logged := strings.Contains(srv.stderr.String(), "studio="+srv.url+"/studio ")
		if logged != on {
			t.Errorf("studio %v: the log names the studio: %v\n%s", on, logged, srv.stderr.String())
		}
	}
}
