package agui

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aguic/aguic/internal/every"
	"github.com/aguic/aguic/internal/syncbuf"
)

// TestSSEFraming checks the bytes of every kind of frame, and that each is
// written with one Write and flushed right after it.
func TestSSEFraming(t *testing.T) {
	var (
		buf     bytes.Buffer
		writes  int
		flushed []int // len(buf) at each flush
	)
	w := NewSSEWriter(writerFunc(func(p []byte) (int, error) {
		writes++
		return buf.Write(p)
	}), func() error {
		flushed = append(flushed, buf.Len())
		return nil
	})
	steps := []struct {
		do   func() error
		want string
	}{
		{func() error { return w.WriteEvent(1, TextMessageContentEvent{MessageID: "m", Delta: "a<b>&\nc"}) },
			"id: 1\ndata: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m\",\"delta\":\"a<b>&\\nc\"}\n\n"},
		{func() error { return w.WriteEvent(0, RunError("x", "")) },
			"data: {\"type\":\"RUN_ERROR\",\"message\":\"x\"}\n\n"},
		{w.Ping, ": ping\n\n"},
		{func() error {
			return w.WriteData(18446744073709551615, []byte("{\n  \"type\": \"CUSTOM\",\r\n  \"name\": \"x\", \"value\": null\n}\n"))
		}, "id: 18446744073709551615\ndata: {\"type\":\"CUSTOM\",\"name\":\"x\",\"value\":null}\n\n"},
		{func() error { return w.WriteData(2, []byte(`{"type":"STATE_DELTA","delta":[]}`)) },
			"id: 2\ndata: {\"type\":\"STATE_DELTA\",\"delta\":[]}\n\n"},
	}
	for i, s := range steps {
		before := buf.Len()
		if err := s.do(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := buf.String()[before:]; got != s.want {
			t.Errorf("step %d wrote %q,\nwant %q", i, got, s.want)
		}
		if writes != i+1 {
			t.Errorf("step %d: %d writes in all, want %d (one per frame)", i, writes, i+1)
		}
		if len(flushed) != i+1 || flushed[i] != buf.Len() {
			t.Errorf("step %d: flushes at %v, want one after the frame at %d", i, flushed, buf.Len())
		}
	}
	if strings.Contains(buf.String(), "\r") {
		t.Error("CR in the stream")
	}

	// Data that is not one line of JSON is refused, and nothing written.
	before := buf.Len()
	for _, data := range []string{"", "{\n", "{\"a\":\n\"b\nc\"}"} {
		if err := w.WriteData(3, []byte(data)); err == nil {
			t.Errorf("WriteData(%q) succeeded", data)
		}
	}
	if buf.Len() != before {
		t.Errorf("refused data wrote %q", buf.String()[before:])
	}
	if w.Err() != nil {
		t.Errorf("refused data stopped the writer: %v", w.Err())
	}
}

// The writer's methods only tests use.

// WriteEvent writes e as one frame with id seq; seq 0 writes no id line.
func (s *SSEWriter) WriteEvent(seq uint64, e Event) error {
	data, err := e.MarshalJSON()
	if err != nil {
		return err
	}
	return s.write(seq, data)
}

// KeepAlive pings every interval from a goroutine of its own until ctx is
// done, a ping fails, or stop is called. stop returns once that goroutine
// has ended, so that nothing is written after it; calling it again does
// nothing.
func (s *SSEWriter) KeepAlive(ctx context.Context, interval time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := every.Run(ctx, interval, func() {
		if s.Ping() != nil {
			cancel()
		}
	})
	return func() {
		cancel()
		<-done
	}
}

// Err returns the error that stopped the writer, or nil.
func (s *SSEWriter) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestSSEErrors: after a failed write or flush every call fails with that
// error and writes nothing.
func TestSSEErrors(t *testing.T) {
	broken := errors.New("broken pipe")
	t.Run("write", func(t *testing.T) {
		writes := 0
		w := NewSSEWriter(writerFunc(func(p []byte) (int, error) {
			writes++
			return 0, broken
		}), nil)
		if err := w.WriteEvent(1, TextMessageEndEvent{MessageID: "m"}); !errors.Is(err, broken) {
			t.Fatalf("WriteEvent: %v", err)
		}
		if err := w.Ping(); !errors.Is(err, broken) {
			t.Errorf("Ping after the error: %v", err)
		}
		if err := w.WriteData(2, []byte(`{}`)); !errors.Is(err, broken) {
			t.Errorf("WriteData after the error: %v", err)
		}
		if writes != 1 {
			t.Errorf("%d writes, want 1", writes)
		}
		if !errors.Is(w.Err(), broken) {
			t.Errorf("Err() = %v", w.Err())
		}
	})
	t.Run("flush", func(t *testing.T) {
		var buf bytes.Buffer
		w := NewSSEWriter(&buf, func() error { return broken })
		if err := w.Ping(); !errors.Is(err, broken) {
			t.Fatalf("Ping: %v", err)
		}
		if err := w.WriteEvent(1, TextMessageEndEvent{MessageID: "m"}); !errors.Is(err, broken) {
			t.Errorf("WriteEvent after the error: %v", err)
		}
		if buf.String() != ": ping\n\n" {
			t.Errorf("wrote %q after the failed flush", buf.String())
		}
	})
	t.Run("marshal", func(t *testing.T) {
		var buf bytes.Buffer
		w := NewSSEWriter(&buf, nil)
		if err := w.WriteEvent(1, CustomEvent{Name: "x", Value: make(chan int)}); err == nil {
			t.Fatal("an unencodable value was written")
		}
		if buf.Len() != 0 || w.Err() != nil {
			t.Errorf("a failed encoding wrote %q or stopped the writer (%v)", buf.String(), w.Err())
		}
	})
}

// TestKeepAlive pings on the ticker, stops on stop, on the context and on
// a failed ping.
func TestKeepAlive(t *testing.T) {
	t.Run("stop", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var buf syncbuf.Buffer
			w := NewSSEWriter(&buf, nil)
			stop := w.KeepAlive(t.Context(), 15*time.Second)
			time.Sleep(46 * time.Second)
			synctest.Wait()
			if got, want := buf.String(), strings.Repeat(": ping\n\n", 3); got != want {
				t.Errorf("after 46s: %q, want %q", got, want)
			}
			stop()
			stop() // again: nothing
			time.Sleep(time.Minute)
			if n := strings.Count(buf.String(), "ping"); n != 3 {
				t.Errorf("%d pings after stop, want 3", n)
			}
		})
	})
	t.Run("context", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var buf syncbuf.Buffer
			w := NewSSEWriter(&buf, nil)
			ctx, cancel := context.WithCancel(t.Context())
			stop := w.KeepAlive(ctx, time.Second)
			time.Sleep(1500 * time.Millisecond)
			cancel()
			synctest.Wait()
			time.Sleep(time.Minute)
			if n := strings.Count(buf.String(), "ping"); n != 1 {
				t.Errorf("%d pings, want 1", n)
			}
			stop()
		})
	})
	t.Run("failed ping", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			writes := 0
			w := NewSSEWriter(writerFunc(func(p []byte) (int, error) {
				writes++
				return 0, io.ErrClosedPipe
			}), nil)
			w.KeepAlive(t.Context(), time.Second)
			time.Sleep(10 * time.Second)
			synctest.Wait()
			if writes != 1 {
				t.Errorf("%d writes, want 1: the keep-alive goes on after a failed ping", writes)
			}
		})
	})
}

// TestReadSSERoundTrip writes every golden event, with pings between, and
// reads them back.
func TestReadSSERoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := NewSSEWriter(&buf, nil)
	cases := goldenCases(t)
	for i, c := range cases {
		seq := uint64(i + 1)
		if i%5 == 4 {
			seq = 0
			if err := w.Ping(); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.WriteEvent(seq, c.e); err != nil {
			t.Fatal(err)
		}
	}
	i := 0
	for f, err := range ReadSSE(&buf) {
		if err != nil {
			t.Fatal(err)
		}
		if i >= len(cases) {
			t.Fatalf("more frames than events: %+v", f)
		}
		c := cases[i]
		wantID := strconv.Itoa(i + 1)
		if i%5 == 4 {
			wantID = ""
		}
		if f.ID != wantID || f.Event != "" {
			t.Errorf("%s: id %q event %q, want id %q", c.name, f.ID, f.Event, wantID)
		}
		want, _ := c.e.MarshalJSON()
		if !bytes.Equal(f.Data, want) {
			t.Errorf("%s: data %s, want %s", c.name, f.Data, want)
		}
		e, err := decodeLike(c.e, f.Data)
		if err != nil || e.EventType() != c.e.EventType() {
			t.Errorf("%s: decoding = %v, %v", c.name, e, err)
		}
		i++
	}
	if i != len(cases) {
		t.Errorf("read %d frames, want %d", i, len(cases))
	}
}

func TestReadSSE(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		frames []Frame
		err    string
	}{
		{"empty", "", nil, ""},
		{"one", "id: 1\ndata: {}\n\n", []Frame{{ID: "1", Data: []byte("{}")}}, ""},
		{"several data lines", "data: a\ndata:  b\ndata\n\n", []Frame{{Data: []byte("a\n b\n")}}, ""},
		{"no space", "id:7\nevent:x\ndata:{}\n\n", []Frame{{ID: "7", Event: "x", Data: []byte("{}")}}, ""},
		{"comments", ": ping\n\n: hi\ndata: x\n: there\n\n", []Frame{{Data: []byte("x")}}, ""},
		{"no data", "id: 3\n\nretry: 10\n\ndata: y\n\n", []Frame{{Data: []byte("y")}}, ""},
		{"unknown fields", "foo: bar\ndata: z\n\n", []Frame{{Data: []byte("z")}}, ""},
		{"CRLF", "data: x\r\n\r\n", nil, "line 1: CR in the stream"},
		{"CR after a frame", "data: x\n\ndata: y\r\n\n", []Frame{{Data: []byte("x")}}, "line 3: CR"},
		{"unterminated line", "data: x", nil, "unexpected EOF"},
		{"unterminated frame", "data: x\n", nil, "unexpected EOF"},
		{"unterminated ping", "data: x\n\n: ping\n", []Frame{{Data: []byte("x")}}, "unexpected EOF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var frames []Frame
			var err error
			for f, e := range ReadSSE(strings.NewReader(tt.in)) {
				if e != nil {
					err = e
					continue
				}
				if err != nil {
					t.Fatalf("a frame after the error %v", err)
				}
				frames = append(frames, f)
			}
			if fmt.Sprintf("%q", frames) != fmt.Sprintf("%q", tt.frames) {
				t.Errorf("frames %q, want %q", frames, tt.frames)
			}
			switch {
			case tt.err == "" && err != nil:
				t.Errorf("error %v", err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Errorf("error %v, want one with %q", err, tt.err)
			}
		})
	}

	// Stopping early is fine.
	n := 0
	for range ReadSSE(strings.NewReader("data: a\n\ndata: b\n\n")) {
		n++
		break
	}
	if n != 1 {
		t.Errorf("%d frames before break", n)
	}
}

// TestSSEConcurrent writes from many goroutines while a keep-alive pings;
// run with -race. Every frame arrives whole and once.
func TestSSEConcurrent(t *testing.T) {
	const writers, each = 8, 200
	var buf syncbuf.Buffer
	w := NewSSEWriter(&buf, func() error { return nil })
	stop := w.KeepAlive(t.Context(), time.Microsecond)
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range each {
				seq := uint64(g*each + i + 1)
				e := TextMessageContentEvent{MessageID: fmt.Sprintf("m%d", g), Delta: strings.Repeat("x", i)}
				if err := w.WriteEvent(seq, e); err != nil {
					t.Error(err)
					return
				}
				if i%50 == 0 {
					if err := w.Ping(); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	stop()
	seen := map[uint64]bool{}
	for f, err := range ReadSSE(strings.NewReader(buf.String())) {
		if err != nil {
			t.Fatal(err)
		}
		seq, err := strconv.ParseUint(f.ID, 10, 64)
		if err != nil || seen[seq] {
			t.Fatalf("bad or repeated id %q", f.ID)
		}
		seen[seq] = true
		g, i := int(seq-1)/each, int(seq-1)%each
		want, _ := TextMessageContentEvent{MessageID: fmt.Sprintf("m%d", g), Delta: strings.Repeat("x", i)}.MarshalJSON()
		if !bytes.Equal(f.Data, want) {
			t.Fatalf("frame %d: %s, want %s", seq, f.Data, want)
		}
	}
	if len(seen) != writers*each {
		t.Errorf("%d frames, want %d", len(seen), writers*each)
	}
}

func TestSSEHeaders(t *testing.T) {
	h := http.Header{}
	SSEHeaders(h)
	for k, v := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"} {
		if h.Get(k) != v {
			t.Errorf("%s: %q, want %q", k, h.Get(k), v)
		}
	}
}

func BenchmarkSSEWriteEvent(b *testing.B) {
	w := NewSSEWriter(io.Discard, func() error { return nil })
	e := TextMessageContentEvent{MessageID: "msg-1", Delta: "Hello, this is a token or two."}
	var seq uint64
	for b.Loop() {
		seq++
		if err := w.WriteEvent(seq, e); err != nil {
			b.Fatal(err)
		}
	}
}
