package host_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/aguic/aguic/compiler"
	"github.com/aguic/aguic/host"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/vm"
	"github.com/aguic/aguic/vm/store/badger"
)

// A Go program embeds aguic: it compiles its workflows, opens a store and
// starts a host on it. After the workflows change and the program starts
// again, a conversation begun on the old version goes on on it, while new
// conversations start on the new one.
func Example() {
	dir, _ := os.MkdirTemp("", "aguic-example")
	defer os.RemoveAll(dir)

	// serve runs one version of the workflows until the turns are sent.
	serve := func(reply string, turns func(url string)) {
		m, bundle := compile(`wf 1
workflow chat {
  conversation = true
  flow {
    top: say "` + reply + `: <<$agent.latestUserMessage.content>>"
    wait: suspend
    goto top
  }
}
`)
		st, err := badger.Open(badger.Options{Dir: dir})
		if err != nil {
			panic(err)
		}
		defer st.Close()
		h, err := host.Start(host.Config{Machine: m, Bundle: bundle, Store: st, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			panic(err)
		}
		defer h.Shutdown(context.Background())
		srv := httptest.NewServer(h.Handler())
		defer srv.Close()
		turns(srv.URL + "/agui/workflows/chat")
	}

	serve("version 1", func(url string) {
		fmt.Println(turn(url, "t1", "hello"))
	})
	serve("version 2", func(url string) {
		fmt.Println(turn(url, "t1", "hello again"))
		fmt.Println(turn(url, "t2", "hi"))
	})
	// Output:
	// version 1: hello
	// version 1: hello again
	// version 2: hi
}

// compile compiles a program of one file, with the standard node kinds.
func compile(src string) (*vm.Machine, []byte) {
	reg := vm.NewRegistry()
	stdlib.Register(reg)
	srcs := []compiler.Source{{Name: "chat.wf", Text: []byte(src)}}
	prog, diags := compiler.Compile(reg, srcs...)
	if diags.HasErrors() {
		panic(diags.Err())
	}
	bundle, _ := compiler.Bundle(srcs)
	return &vm.Machine{Program: prog, Registry: reg}, bundle
}

// turn sends a user message to a thread, as an AG-UI client does, and
// returns the text of the answer.
func turn(url, thread, text string) string {
	body, _ := json.Marshal(map[string]any{
		"threadId": thread,
		"messages": []any{map[string]any{"id": thread + "-" + text, "role": "user", "content": text}},
	})
	resp, err := http.Post(url, "application/json", strings.NewReader(string(body)))
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		panic(fmt.Sprintf("%s: %s", resp.Status, b))
	}
	var answer strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var e struct{ Type, Delta, Message string }
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			panic(err)
		}
		switch e.Type {
		case "TEXT_MESSAGE_CONTENT":
			answer.WriteString(e.Delta)
		case "RUN_ERROR":
			panic(e.Message)
		}
	}
	return answer.String()
}
