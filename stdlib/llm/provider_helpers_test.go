package llm

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
)

// newRecordingServer starts a fake model API on loopback that takes POST
// requests of a JSON body at path, hands each body with its request to
// record, holding mu, and answers it with reply. It is closed when the
// test ends.
func newRecordingServer(t *testing.T, path string, mu *sync.Mutex, record func(body map[string]any, r *http.Request), reply func(w http.ResponseWriter, r *http.Request)) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path || r.Method != http.MethodPost {
			http.Error(w, "not found: "+r.Method+" "+r.URL.Path, http.StatusNotFound)
			return
		}
		data, _ := io.ReadAll(r.Body)
		var body map[string]any
		if err := json.Unmarshal(data, &body); err != nil {
			http.Error(w, "bad JSON", http.StatusBadRequest)
			return
		}
		mu.Lock()
		record(body, r)
		mu.Unlock()
		reply(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// streamFunc sends a request to a provider whose fake server is set up by
// the test, as Provider.Stream does.
type streamFunc func(ctx context.Context, on func(Chunk) error) (*Response, error)

// checkHelloWorld fails the test unless the chunks are the text "Hel",
// "lo, " and "world", and resp that text alone with 12 tokens in and 5
// out, as the fake servers of the text tests answer.
func checkHelloWorld(t *testing.T, chunks []Chunk, resp *Response) {
	t.Helper()
	want := []Chunk{{Text: "Hel"}, {Text: "lo, "}, {Text: "world"}}
	if !reflect.DeepEqual(chunks, want) {
		t.Errorf("chunks %+v, want %+v", chunks, want)
	}
	if resp.Text != "Hello, world" || resp.Reasoning != "" || resp.ToolCalls != nil {
		t.Errorf("response %+v", resp)
	}
	if resp.Usage != (Usage{InputTokens: 12, OutputTokens: 5}) {
		t.Errorf("usage %+v", resp.Usage)
	}
}

// testCancel: cancelling the context while the server holds the stream
// open, or before the call, ends the call with context.Canceled.
func testCancel(t *testing.T, stream streamFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := stream(ctx, func(Chunk) error { cancel(); return nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}

	// Cancelled before the call.
	_, err = stream(ctx, (&oaCollect{}).on)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("before: got %v, want context.Canceled", err)
	}
}

// testCallbackError: the error of the on callback ends the call at the
// first chunk, and the call returns it.
func testCallbackError(t *testing.T, stream streamFunc) {
	t.Helper()
	stop := errors.New("stop")
	n := 0
	_, err := stream(context.Background(), func(Chunk) error { n++; return stop })
	if err != stop || n != 1 {
		t.Fatalf("got %v after %d chunks", err, n)
	}
}
