package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/lang"
	"github.com/aguic/aguic/server"
	"github.com/aguic/aguic/server/agui"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/vm"
	"github.com/aguic/aguic/vm/store/badger"
)

// A request hook that validates the caller's bearer token and gives the
// workflow what it derives from it: a user name and permissions, never the
// token (the context is stored with the thread). A request it refuses
// gets RUN_STARTED, then RUN_ERROR with the hook's message, and nothing
// runs.
func ExampleConfig_hook() {
	src := `wf 1

workflow hello {
  flow { say "Hello <<$auth.userName>>, you may <<$auth.permissions[0]>>." }
}
`
	reg := vm.NewRegistry()
	stdlib.Register(reg)
	prog, diags := compiler.Compile(reg, compiler.Source{Name: "hello.wf", Text: lang.Clean([]byte(src))})
	if diags.HasErrors() {
		log.Fatal(diags.Err())
	}
	st, err := badger.Open(badger.Options{InMemory: true})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	// users stands for the application's authentication service.
	users := map[string]string{"ada-token": "Ada"}
	srv, err := server.New(server.Config{
		Machine: &vm.Machine{Program: prog, Registry: reg},
		Store:   st,
		Logger:  slog.New(slog.DiscardHandler),
		Hook: func(ctx context.Context, r *server.HookRequest) error {
			token, _ := strings.CutPrefix(r.Headers.Get("Authorization"), "Bearer ")
			name, ok := users[token]
			if !ok {
				return fmt.Errorf("sign in to run %s", r.WorkflowID)
			}
			// Derived claims only.
			r.Context["auth"] = map[string]any{"userName": name, "permissions": []string{"workflow:run"}}
			r.Agent["userName"] = name
			return nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()

	for _, token := range []string{"ada-token", "stolen-token"} {
		req, _ := http.NewRequest(http.MethodPost, hs.URL+"/agui/workflows/hello", strings.NewReader(`{"threadId": "t1", "messages": [{"id": "m1", "role": "user", "content": "hi"}]}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := hs.Client().Do(req)
		if err != nil {
			log.Fatal(err)
		}
		for f, err := range agui.ReadSSE(resp.Body) {
			if err != nil {
				log.Fatal(errors.Join(err, resp.Body.Close()))
			}
			var ev struct{ Type, Delta, Message string }
			json.Unmarshal(f.Data, &ev)
			switch ev.Type {
			case "TEXT_MESSAGE_CONTENT":
				fmt.Println(ev.Type, ev.Delta)
			case "RUN_ERROR":
				fmt.Println(ev.Type, ev.Message)
			case "RUN_STARTED", "RUN_FINISHED":
				fmt.Println(ev.Type)
			}
		}
		resp.Body.Close()
	}
	// Output:
	// RUN_STARTED
	// TEXT_MESSAGE_CONTENT Hello Ada, you may workflow:run.
	// RUN_FINISHED
	// RUN_STARTED
	// RUN_ERROR sign in to run hello
}
