package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aguic/aguic/internal/aguitest"
	"github.com/aguic/aguic/internal/golden"
	"github.com/aguic/aguic/server"
	"github.com/aguic/aguic/server/agui"
)

// TestDialects has a client of AG-UI 1.0 and one before 1.0 hold the same
// conversation (testdata/dialects.wf, three turns), each on a server of
// its own with the same ids and clock, and read its replay, its history
// stream, a run's follow stream and the snapshot a run request without
// messages answers. Every stream, as sent, is in testdata/dialects/v1.txt
// and v0.txt (-update rewrites them): the two files differ only where the
// dialects do.
func TestDialects(t *testing.T) {
	for _, c := range []struct {
		name    string
		version string // the protocolVersion of the requests; "" sends none
		query   string // the same for the routes that take it as a parameter
	}{
		{"v1", "1.0", ""},
		{"v0", "", "?protocolVersion=0.0.57"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, fixedIDs)
			var log strings.Builder
			// record adds a response's stream to the log, and reads it as
			// the stream of a run (replay's events are not one).
			record := func(what string, resp *http.Response) []event {
				t.Helper()
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					t.Fatal(err)
				}
				// The snapshot stream of history makes a run id of its own.
				fmt.Fprintf(&log, "### %s\n%s", what, uuidRE.ReplaceAll(body, []byte("run-<uuid>")))
				if strings.Contains(what, "/replay") {
					for f, err := range agui.ReadSSE(bytes.NewReader(body)) {
						if _, derr := aguitest.DecodeEvent(f.Data); err != nil || derr != nil {
							t.Errorf("replay frame %s: %v %v", f.Data, err, derr)
						}
					}
					return nil
				}
				resp.Body = io.NopCloser(bytes.NewReader(body))
				return e.stream(resp)
			}
			run := func(runID, rest string) []event {
				t.Helper()
				body := `{"threadId":"t1","runId":"` + runID + `"`
				if c.version != "" {
					body += `,"protocolVersion":"` + c.version + `"`
				}
				body += rest + "}"
				return record("POST /agui/workflows/dialects "+body, e.post("/agui/workflows/dialects", body))
			}

			first := run("r1", `,"state":{"todos":[]},"messages":[{"id":"m1","role":"user","content":"go"}]`)
			call := ""
			for _, ev := range first {
				if ev.typ() == "TOOL_CALL_START" && ev.data["toolCallName"] == "confirm" {
					call = str(ev.data["toolCallId"])
				}
			}
			second := run("r2", `,"messages":[{"id":"m2","role":"tool","toolCallId":"`+call+`","content":"yes"}]`)
			ins, _ := outcome(t, second)["interrupts"].([]any)
			if len(ins) != 1 {
				t.Fatalf("the second turn ended with %v, want one interrupt", last(second))
			}
			id := str(ins[0].(map[string]any)["id"])
			run("r3", `,"resume":[{"interruptId":"`+id+`","status":"resolved"}]`)
			run("r4", "")

			record("GET /agui/threads/t1/replay"+c.query, e.get("/agui/threads/t1/replay"+c.query))
			record("GET /agui/threads/t1/runs/r1/events"+c.query, e.get("/agui/threads/t1/runs/r1/events"+c.query))
			history := `{"threadId":"t1","workflowId":"dialects"`
			if c.query != "" {
				history += `,"protocolVersion":"0.0.57"`
			}
			history += "}"
			record("POST /agui/history "+history, e.post("/agui/history", history))

			golden.Check(t, filepath.Join("testdata", "dialects", c.name+".txt"), []byte(log.String()))
		})
	}
}

var uuidRE = regexp.MustCompile(`run-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// fixedIDs gives a server the same frame ids and clock on every run.
func fixedIDs(c *server.Config) {
	n := 0
	c.Machine.NewID = func() string { n++; return fmt.Sprintf("%016x", n) }
	now := func() time.Time { return time.UnixMilli(1767950998788) }
	c.Machine.Now, c.Now = now, now
}

// TestDialectCancelled: a cancelled run ends with outcome cancelled for a
// client of 1.0, and with a RUN_FINISHED without outcome for one before
// 1.0, which knows no such outcome.
func TestDialectCancelled(t *testing.T) {
	e := newEnv(t, nil)
	b := newBlocker(t)
	for _, c := range []struct {
		body string
		want any
	}{
		{slowBody("r1", b.srv.URL), map[string]any{"type": "cancelled"}},
		{strings.Replace(slowBody("r2", b.srv.URL), `"protocolVersion": "1.0"`, `"protocolVersion": "0.0.59"`, 1), nil},
		{strings.Replace(slowBody("r3", b.srv.URL), `"protocolVersion": "1.0", `, "", 1), nil},
	} {
		resp := e.post("/agui/workflows/slow", c.body)
		<-b.entered
		e.cancelStatus(`{"threadId": "busy"}`)
		end := last(e.stream(resp))
		if end["type"] != "RUN_FINISHED" {
			t.Fatalf("%s: the run ended with %v", c.body, end)
		}
		if got := end["outcome"]; !jsonEqual(got, c.want) {
			t.Errorf("%s: outcome %v, want %v", c.body, got, c.want)
		}
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}
