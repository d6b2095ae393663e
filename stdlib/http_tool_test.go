package stdlib_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aguic/aguic/internal/vmtest"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/stdlib/llm"
	"github.com/aguic/aguic/vm"
)

// toolAPI answers the requests of the http tools of TestHTTPTool.
func toolAPI(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/json":
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Count", "3")
		w.Write([]byte(`{"temp": 18.4, "unit": "°C"}`))
	case "/text":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("sunny"))
	case "/missing":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte("no such place"))
	default:
		http.Error(w, "broken", http.StatusInternalServerError)
	}
}

// TestHTTPTool runs a model whose backend tool is an http node against a
// local server and checks what the model gets back: the body by default,
// the status beside it when allow_status lets a non-2xx one through, an
// error for the others, or what the tool's result makes of $response.
// $response is bound only while the result runs: the context root of the
// same name keeps its value.
func TestHTTPTool(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(toolAPI))
	t.Cleanup(api.Close)
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()

	tests := []struct {
		name string
		impl string // the tool's http node and result; <<$input.url>> is the server's URL
		path string // the path the model asks for
		want string // what the model gets; <url> is the server's URL
		// prefix: want is only the start of what the model gets (the rest
		// depends on the machine).
		prefix bool
	}{
		{name: "json body", path: "/json",
			impl: `http GET "<<$input.url>><<$args.path>>"`,
			want: `{"temp":18.4,"unit":"°C"}`},
		{name: "text body", path: "/text",
			impl: `http GET "<<$input.url>><<$args.path>>"`,
			want: `sunny`},
		{name: "status not allowed", path: "/missing",
			impl: `http GET "<<$input.url>><<$args.path>>"`,
			want: `error: http GET <url>/missing: status 404 Not Found: "no such place"`},
		{name: "status allowed", path: "/missing",
			impl: `http GET "<<$input.url>><<$args.path>>" { allow_status = [404] }`,
			want: `{"body":"no such place","status":404}`},
		{name: "result shapes the response", path: "/json",
			impl: `http GET "<<$input.url>><<$args.path>>"
    result = "<<$response.body.temp>> <<$response.body.unit>> (<<$response.status>>, <<$response.headers['x-count']>> of <<$args.path>>)"`,
			want: `18.4 °C (200, 3 of /json)`},
		{name: "result words an allowed status", path: "/missing",
			impl: `http GET "<<$input.url>><<$args.path>>" { allow_status = [404] }
    result = $response.status == 404 ? "unknown place" : $response.body`,
			want: `unknown place`},
		{name: "result gives the whole response", path: "/text",
			impl: `result = $response
    http GET "<<$input.url>><<$args.path>>"`,
			want: `{"body":"sunny","headers":{"content-length":"5","content-type":"text/plain; charset=utf-8","date":`, prefix: true},
		{name: "result fails", path: "/text",
			impl: `http GET "<<$input.url>><<$args.path>>"
    result = parse_json($response.body)`,
			want: `error: parse_json($response.body): parse_json: invalid JSON at offset 1: invalid character 's' looking for beginning of value`},
		{name: "failed request skips the result", path: "/broken",
			impl: `http GET "<<$input.url>><<$args.path>>"
    result = "never"`,
			want: `error: http GET <url>/broken: status 500 Internal Server Error: "broken"`},
		{name: "no response", path: "/json",
			impl: `http GET "` + gone.URL + `<<$args.path>>"
    result = "never"`,
			want: `error: http GET ` + gone.URL + `/json: dial tcp `, prefix: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			script, err := llm.ParseScript([]byte("reply after user\ntool: fetch {\"path\": \"" + tt.path + "\"}\nreply after tool\ntext: done\n"))
			if err != nil {
				t.Fatal(err)
			}
			src := `wf 1
workflow w {
  tool fetch {
    description = "Fetch a path"
    ` + tt.impl + `
  }
  flow {
    set $response = "the flow's own"
    answer: model { prompt = "go"; tools = [fetch] } -> $reply
  }
}
`
			m := vmtest.Machine(t, src, stdlib.Options{
				Models:       llm.Resolver(map[string]llm.Provider{"script": script}),
				DefaultModel: "script/default",
			})
			m.Deadline = time.Minute // a guard: a test that would wait longer fails
			f, o, rec := vmtest.Run(t, m, "w", map[string]any{"input": map[string]any{"url": api.URL}})
			if o.Status != vm.Finished {
				t.Fatalf("the run ended %s: %v", o.Status, o.Err)
			}
			reqs := script.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d model requests, want 2", len(reqs))
			}
			msgs := reqs[1].Messages
			got := msgs[len(msgs)-1].Content
			want := strings.ReplaceAll(tt.want, "<url>", api.URL)
			if tt.prefix && !strings.HasPrefix(got, want) || !tt.prefix && got != want {
				t.Errorf("the model got\n\t%s\nwant\n\t%s", got, want)
			}
			var streamed []string
			for _, e := range rec.Events {
				if e.Type == vm.ToolCallResult {
					streamed = append(streamed, e.Content)
				}
			}
			if len(streamed) != 1 || streamed[0] != got {
				t.Errorf("streamed the results %q, want the one the model got", streamed)
			}
			if r := f.Context["response"]; r != "the flow's own" {
				t.Errorf("$response after the tool ran: %v", r)
			}
		})
	}
}
