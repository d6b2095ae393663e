package lsp

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/sourcegraph/jsonrpc2"
)

// maxMessage is the largest message body the server reads, in bytes.
const maxMessage = 64 << 20

// stream is a jsonrpc2.ObjectStream of messages framed by a Content-Length
// header, as the protocol's base layer says. Unlike the framing of
// jsonrpc2, a message it cannot read is answered here with a JSON-RPC
// error (parse error for a body that is not JSON, invalid request for JSON
// that is not a message) and reading goes on with the next one; only the
// end of the input or a header that cannot be found again ends it.
type stream struct {
	rwc io.ReadWriteCloser
	r   *bufio.Reader
	mu  sync.Mutex // guards w
	w   *bufio.Writer
}

func newStream(rwc io.ReadWriteCloser) *stream {
	return &stream{rwc: rwc, r: bufio.NewReader(rwc), w: bufio.NewWriter(rwc)}
}

// errFraming is a header the stream cannot read.
var errFraming = errors.New("framing")

// WriteObject writes one message.
func (s *stream) WriteObject(obj any) error {
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := fmt.Fprintf(s.w, "Content-Length: %d\r\n\r\n", len(data)); err != nil {
		return err
	}
	if _, err := s.w.Write(data); err != nil {
		return err
	}
	return s.w.Flush()
}

// ReadObject reads the next message that decodes into v, answering the
// ones that do not.
func (s *stream) ReadObject(v any) error {
	for {
		body, err := s.frame()
		if errors.Is(err, errFraming) {
			s.reject(nil, jsonrpc2.CodeParseError, err.Error())
			continue
		}
		if err != nil {
			return err
		}
		if err := json.Unmarshal(body, v); err != nil {
			code := int64(jsonrpc2.CodeInvalidRequest)
			if !json.Valid(body) {
				code = jsonrpc2.CodeParseError
			}
			var probe struct {
				ID *jsonrpc2.ID `json:"id"`
			}
			_ = json.Unmarshal(body, &probe) // an id to answer, when there is one
			s.reject(probe.ID, code, err.Error())
			continue
		}
		return nil
	}
}

// reject answers a message the server cannot read.
func (s *stream) reject(id *jsonrpc2.ID, code int64, message string) {
	resp := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      *jsonrpc2.ID    `json:"id"`
		Error   *jsonrpc2.Error `json:"error"`
	}{"2.0", id, &jsonrpc2.Error{Code: code, Message: message}}
	_ = s.WriteObject(resp) // a reader that has gone ends the next read
}

// frame reads the headers and the body of one message.
func (s *stream) frame() ([]byte, error) {
	length := -1
	var bad string
	headers := false
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			if err == io.EOF && line != "" {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if headers {
				break
			}
			continue // blank lines between messages
		}
		headers = true
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			bad = fmt.Sprintf("malformed header %q", line)
			continue
		}
		if strings.EqualFold(strings.TrimSpace(name), "Content-Length") {
			n, err := strconv.Atoi(strings.TrimSpace(value))
			if err != nil || n < 0 || n > maxMessage {
				bad = fmt.Sprintf("bad Content-Length %q", strings.TrimSpace(value))
				continue
			}
			length = n
		}
	}
	if bad != "" || length < 0 {
		if bad == "" {
			bad = "no Content-Length header"
		}
		if length > 0 {
			if _, err := io.CopyN(io.Discard, s.r, int64(length)); err != nil {
				return nil, err
			}
		}
		return nil, fmt.Errorf("%w: %s", errFraming, bad)
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(s.r, body); err != nil {
		return nil, err
	}
	return body, nil
}

// Close closes the underlying stream.
func (s *stream) Close() error { return s.rwc.Close() }
