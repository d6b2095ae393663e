package server_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// rawRequest writes head and body to the server as they are, then closes
// the connection's writing side (a client that stops sending) and reads
// the answer.
func rawRequest(t *testing.T, addr, head, body string) (*http.Response, []byte) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(conn, head+"\r\n"+body); err != nil {
		t.Fatal(err)
	}
	conn.(*net.TCPConn).CloseWrite()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, data
}

// TestBrokenBody sends bodies that cannot be read to their end: each is a
// 400 with the reason, on every route that reads a body, and nothing runs.
func TestBrokenBody(t *testing.T) {
	e := newEnv(t, nil)
	addr := strings.TrimPrefix(e.http.URL, "http://")
	const good = `{"threadId": "t-broken", "messages": [{"id": "m1", "role": "user", "content": "hi"}]}`
	tests := []struct {
		name, headers, body string
		reason              string // in the problem's detail
	}{
		{"shorter than its Content-Length", "Content-Length: 500\r\n", good, "unexpected EOF"},
		{"cut off mid-body", "Content-Length: 500\r\n", good[:20], "unexpected EOF"},
		{"a chunk size that is not hexadecimal", "Transfer-Encoding: chunked\r\n", "zz\r\n" + good + "\r\n0\r\n\r\n", "chunk"},
		{"a chunk cut off", "Transfer-Encoding: chunked\r\n", "400\r\n" + good, "unexpected EOF"},
		{"no last chunk", "Transfer-Encoding: chunked\r\n", "5\r\n{\"thr\r\n", "unexpected EOF"},
	}
	for _, path := range []string{"/agui/workflows/echo", "/agui", "/agui/threads/t-broken/runs", "/agui/cancel", "/agui/history"} {
		for _, tt := range tests {
			t.Run(path+" "+tt.name, func(t *testing.T) {
				head := "POST " + path + " HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nConnection: close\r\n" + tt.headers
				resp, body := rawRequest(t, addr, head, tt.body)
				if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Content-Type") != "application/problem+json" {
					t.Fatalf("status %d, Content-Type %q, want 400 problem+json: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
				}
				var p struct {
					Status int    `json:"status"`
					Title  string `json:"title"`
					Detail string `json:"detail"`
				}
				if err := json.Unmarshal(body, &p); err != nil {
					t.Fatalf("%s: %v", body, err)
				}
				if p.Status != http.StatusBadRequest || p.Title != "Bad Request" ||
					!strings.HasPrefix(p.Detail, "the request body could not be read: ") || !strings.Contains(p.Detail, tt.reason) {
					t.Errorf("problem %s, want a 400 whose detail says the body could not be read: %s", body, tt.reason)
				}
			})
		}
	}
	e.problem(e.get("/agui/threads/t-broken/messages"), http.StatusNotFound) // no request made the thread
}
