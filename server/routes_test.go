package server_test

import (
	"strings"
	"testing"

	"github.com/aguic/aguic/server"
)

// TestRouteErrors checks that the requests no route takes, and bodies
// not sent as JSON, are answered as problem documents like every other
// error: 404 naming the path, 405 naming the method with the allowed
// methods in Allow, 415.
func TestRouteErrors(t *testing.T) {
	for _, tokens := range []bool{false, true} {
		var edit func(*server.Config)
		var auth []string
		name := "open"
		if tokens {
			edit, auth, name = withTokens(t), bearer("ada-secret-token"), "tokens"
		}
		e := newEnv(t, edit)
		outer := e.t
		for _, tc := range []struct {
			method, path, body, ctype string
			status                    int
			allow                     string // the Allow header of a 405
			detail                    string // a part of the detail
		}{
			{"GET", "/agui/nope", "", "", 404, "", "/agui/nope"},
			{"GET", "/agui/workflows/echo/more", "", "", 404, "", "/agui/workflows/echo/more"},
			{"POST", "/nope", `{}`, "", 404, "", "/nope"},
			{"DELETE", "/agui/workflows/echo", "", "", 405, "GET, HEAD, POST", "DELETE"},
			{"PUT", "/agui/workflows/echo", `{}`, "", 405, "GET, HEAD, POST", "PUT"},
			{"GET", "/agui/cancel", "", "", 405, "POST", "GET"},
			{"DELETE", "/agui/threads/t/runs", "", "", 405, "GET, HEAD, POST", "DELETE"},
			{"POST", "/agui/threads", `{}`, "", 405, "GET, HEAD", "POST"},
			{"POST", "/agui/threads/t/messages", `{}`, "", 405, "GET, HEAD", "POST"},
			{"OPTIONS", "/agui", "", "", 405, "POST", "OPTIONS"},
			{"POST", "/agui/workflows/echo", `{"threadId": "t"}`, "text/plain", 415, "", "text/plain"},
			{"POST", "/agui", `{"threadId": "t"}`, "application/x-www-form-urlencoded", 415, "", "urlencoded"},
			{"POST", "/agui/threads/t/runs", `{}`, "text/plain", 415, "", "text/plain"},
			{"POST", "/agui/history", `{"threadId": "t", "workflowId": "counter"}`, "text/plain", 415, "", "text/plain"},
			{"POST", "/agui/cancel", `{"threadId": "t"}`, "text/plain", 415, "", "text/plain"},
		} {
			t.Run(name+" "+tc.method+" "+tc.path, func(t *testing.T) {
				e.t = t
				defer func() { e.t = outer }()
				header := auth
				if tc.ctype != "" {
					header = append([]string{"Content-Type", tc.ctype}, header...)
				}
				resp := e.send(tc.method, tc.path, tc.body, header...)
				if got := resp.Header.Get("Allow"); got != tc.allow {
					t.Errorf("Allow %q, want %q", got, tc.allow)
				}
				p := e.problem(resp, tc.status)
				if all := str(p["detail"]) + strings.Join(errorMessages(p), " "); !strings.Contains(all, tc.detail) {
					t.Errorf("problem %v does not mention %q", p, tc.detail)
				}
			})
		}
		e.t = outer
	}
}

// errorMessages are the messages of a problem's errors.
func errorMessages(p map[string]any) []string {
	var out []string
	errs, _ := p["errors"].([]any)
	for _, e := range errs {
		m, _ := e.(map[string]any)
		out = append(out, str(m["message"]))
	}
	return out
}
