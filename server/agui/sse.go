package agui

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strconv"
	"sync"
)

// SSEHeaders sets the response headers of an AG-UI event stream: the
// content type, no caching, and no buffering by proxies (nginx).
func SSEHeaders(h http.Header) {
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
}

// SSEWriter writes AG-UI events as server-sent events, each frame
//
//	id: <seq>\n
//	data: <compact JSON>\n
//	\n
//
// with LF only (the official client does not accept CRLF), the id line
// left out when seq is 0, and flushed as a whole. Keep-alives are the
// comment ": ping\n\n". Its methods may be called from several goroutines
// (events from the run, pings from a ticker); frames never interleave.
// After a write or flush fails, every call returns that error and writes
// nothing.
type SSEWriter struct {
	mu    sync.Mutex
	w     io.Writer
	flush func() error
	buf   []byte
	err   error
}

// NewSSEWriter returns a writer of frames to w that calls flush after every
// frame; flush may be nil. For an http.ResponseWriter pass
// http.NewResponseController(w).Flush.
func NewSSEWriter(w io.Writer, flush func() error) *SSEWriter {
	return &SSEWriter{w: w, flush: flush}
}

// WriteData writes one frame of an event already encoded as JSON, such as
// a stored one. JSON spread over several lines is compacted first.
func (s *SSEWriter) WriteData(seq uint64, data []byte) error {
	if len(data) == 0 {
		return errors.New("sse: empty data")
	}
	if bytes.ContainsAny(data, "\r\n") {
		var b bytes.Buffer
		if err := json.Compact(&b, data); err != nil {
			return fmt.Errorf("sse: data spans several lines and is not JSON: %w", err)
		}
		data = b.Bytes()
	}
	return s.write(seq, data)
}

// Ping writes the keep-alive comment.
func (s *SSEWriter) Ping() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.send(append(s.buf[:0], ": ping\n\n"...))
}

func (s *SSEWriter) write(seq uint64, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.buf[:0]
	if seq != 0 {
		b = append(b, "id: "...)
		b = strconv.AppendUint(b, seq, 10)
		b = append(b, '\n')
	}
	b = append(b, "data: "...)
	b = append(b, data...)
	b = append(b, "\n\n"...)
	return s.send(b)
}

// send writes one whole frame and flushes; s.mu is held.
func (s *SSEWriter) send(frame []byte) error {
	s.buf = frame[:0]
	if s.err != nil {
		return s.err
	}
	if _, err := s.w.Write(frame); err != nil {
		s.err = fmt.Errorf("sse: %w", err)
		return s.err
	}
	if s.flush != nil {
		if err := s.flush(); err != nil {
			s.err = fmt.Errorf("sse: flush: %w", err)
			return s.err
		}
	}
	return nil
}

// Frame is one server-sent event as ReadSSE reads it.
type Frame struct {
	ID    string // the value of the frame's id line; "" when it has none
	Event string // the value of its event line; AG-UI streams have none
	Data  []byte // its data lines, joined by \n
}

// ReadSSE reads the frames of an event stream, for tests of a server: each
// frame with data, in order; comments (keep-alives) and frames without
// data are skipped. It is stricter than the specification, as the
// official client is: a CR anywhere is an error (lines end with LF only),
// and so is a stream that ends inside a frame. After an error it yields
// nothing more.
func ReadSSE(r io.Reader) iter.Seq2[Frame, error] {
	return func(yield func(Frame, error) bool) {
		br := bufio.NewReader(r)
		var (
			f       Frame
			data    [][]byte
			started bool // a line of the current frame was read
			line    int
		)
		for {
			b, err := br.ReadBytes('\n')
			if err == io.EOF {
				if len(b) > 0 || started {
					yield(Frame{}, fmt.Errorf("sse: line %d: %w: the stream ends inside a frame", line+1, io.ErrUnexpectedEOF))
				}
				return
			}
			if err != nil {
				yield(Frame{}, fmt.Errorf("sse: %w", err))
				return
			}
			line++
			b = b[:len(b)-1]
			if bytes.IndexByte(b, '\r') >= 0 {
				yield(Frame{}, fmt.Errorf("sse: line %d: CR in the stream (lines must end with LF only)", line))
				return
			}
			if len(b) == 0 {
				if data != nil {
					f.Data = bytes.Join(data, []byte{'\n'})
					if !yield(f, nil) {
						return
					}
				}
				f, data, started = Frame{}, nil, false
				continue
			}
			started = true
			if b[0] == ':' {
				continue // a comment
			}
			field, value, _ := bytes.Cut(b, []byte{':'})
			value = bytes.TrimPrefix(value, []byte{' '})
			switch string(field) {
			case "data":
				data = append(data, value)
			case "id":
				f.ID = string(value)
			case "event":
				f.Event = string(value)
			}
		}
	}
}
