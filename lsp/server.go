package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/url"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/aguic/aguic/lang"
	"github.com/aguic/aguic/vm"
	"github.com/sourcegraph/jsonrpc2"
	"github.com/tliron/glsp"
	protocol "github.com/tliron/glsp/protocol_3_16"
)

// ErrNoShutdown is what Serve returns when the client ended the session
// without asking the server to shut down first (the protocol's exit code
// 1).
var ErrNoShutdown = errors.New("the client exited without a shutdown request")

// JSON-RPC error codes of the protocol that jsonrpc2 does not name.
const (
	codeServerNotInitialized = -32002
	codeRequestFailed        = -32803
)

// Server is a language server for .wf files: the documents a client has
// open, the registry they are checked against, and the checks waiting to
// run. Make one with New for each connection.
type Server struct {
	reg     *vm.Registry
	log     *log.Logger
	version string

	// pub orders publications: a document's diagnostics are never sent
	// after the empty list its close sends. It is taken before mu.
	pub sync.Mutex

	mu        sync.Mutex
	conn      *jsonrpc2.Conn
	docs      map[string]*document // by URI
	disk      map[string]*diskFile // parsed files on disk, by path
	published map[string]bool      // URIs whose diagnostics the client shows
	pending   map[string]bool      // project directories to check again
	shutdown  bool

	wake chan struct{}
}

// document is a text the client has open.
type document struct {
	uri     string
	path    string // "" when the URI is not a file's
	version int32
	raw     []byte // as the client holds it
	text    *text

	// The index is built at the first request that needs it, or after the
	// document's check, so that parsing it for navigation does not delay
	// its diagnostics.
	mu    sync.Mutex // guards built and the indexes until built
	built bool
	reg   *vm.Registry
	ix    *index // of text; its tree is nil when the text does not parse
	good  *index // the last index of this document with a tree
	rough *index // read from the text, when it does not parse
}

// index returns the index of the document's text, built once.
func (d *document) index() *index {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.built {
		d.built = true
		tree, diags := lang.Parse(d.name(), d.text.src)
		d.ix = newIndex(d.reg, d.name(), d.text, tree)
		d.ix.broken = diags.HasErrors()
		if tree != nil {
			d.good = d.ix
		} else {
			d.rough = textIndex(d.name(), d.text)
		}
	}
	return d.ix
}

// lastGood returns the last index with a tree built for this document or
// an earlier version of it, without building one.
func (d *document) lastGood() *index {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.built && d.ix.tree != nil {
		return d.ix
	}
	return d.good
}

// name is what diagnostics and the compiler call the document.
func (d *document) name() string {
	if d.path != "" {
		return d.path
	}
	return d.uri
}

// nav is the index navigation and completion use: the current one, or the
// last good one while the text does not parse, or, when it never has, one
// read from the text.
func (d *document) nav() *index {
	d.index()
	switch {
	case d.ix.tree != nil:
		return d.ix
	case d.good != nil:
		return d.good
	}
	return d.rough
}

// Options configure a Server.
type Options struct {
	Log     io.Writer // where the server logs; nil: nowhere
	Version string    // the version it tells the client
}

// New returns a server that checks documents against reg.
func New(reg *vm.Registry, o Options) *Server {
	w := o.Log
	if w == nil {
		w = io.Discard
	}
	return &Server{
		reg:       reg,
		log:       log.New(w, "aguic lsp: ", log.LstdFlags),
		version:   o.Version,
		docs:      map[string]*document{},
		disk:      map[string]*diskFile{},
		published: map[string]bool{},
		pending:   map[string]bool{},
		wake:      make(chan struct{}, 1),
	}
}

// Serve answers the client at the other end of rwc until it exits or the
// stream ends, and closes rwc. It returns nil after a shutdown request and
// an exit notification, ErrNoShutdown after an exit without shutdown or
// the end of the stream.
func (s *Server) Serve(ctx context.Context, rwc io.ReadWriteCloser) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	h := s.handler()
	conn := jsonrpc2.NewConn(ctx, newStream(rwc), jsonrpc2.HandlerWithError(func(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
		return s.handle(ctx, conn, req, h)
	}))
	checks := make(chan struct{})
	go func() {
		defer close(checks)
		s.checkLoop(ctx)
	}()
	select {
	case <-conn.DisconnectNotify():
	case <-ctx.Done():
		conn.Close()
	}
	cancel()
	<-checks
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.shutdown {
		return ErrNoShutdown
	}
	return nil
}

// handle answers one request or notification. A panic in a handler is an
// internal error of that request, not the end of the server.
func (s *Server) handle(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request, h *protocol.Handler) (result any, err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Printf("%s: panic: %v\n%s", req.Method, r, debug.Stack())
			result, err = nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInternalError, Message: fmt.Sprintf("internal error: %v", r)}
		}
	}()
	s.mu.Lock()
	s.conn = conn
	shutdown := s.shutdown
	s.mu.Unlock()
	switch {
	case req.Method == "exit":
		conn.Close()
		return nil, nil
	case shutdown:
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidRequest, Message: "the server is shut down: only exit is allowed"}
	}
	gc := &glsp.Context{
		Method: req.Method,
		Params: json.RawMessage("null"),
		Notify: func(method string, params any) {
			if err := conn.Notify(ctx, method, params); err != nil {
				s.log.Printf("notify %s: %v", method, err)
			}
		},
	}
	if req.Params != nil {
		gc.Params = *req.Params
	}
	r, validMethod, validParams, err := h.Handle(gc)
	switch {
	case !validMethod:
		if req.Notif {
			return nil, nil // notifications the server does not know, such as $/ ones, are ignored
		}
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: fmt.Sprintf("method not supported: %s", req.Method)}
	case !validParams:
		msg := "invalid params"
		if err != nil {
			msg = "invalid params: " + err.Error()
		}
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidParams, Message: msg}
	case err != nil:
		var rpcErr *jsonrpc2.Error
		if errors.As(err, &rpcErr) {
			return nil, rpcErr
		}
		if !h.IsInitialized() && req.Method != string(protocol.MethodInitialize) {
			return nil, &jsonrpc2.Error{Code: codeServerNotInitialized, Message: err.Error()}
		}
		return nil, &jsonrpc2.Error{Code: codeRequestFailed, Message: err.Error()}
	}
	return r, nil
}

// handler maps the protocol's methods to the server's.
func (s *Server) handler() *protocol.Handler {
	return &protocol.Handler{
		Initialize:  s.initialize,
		Initialized: func(*glsp.Context, *protocol.InitializedParams) error { return nil },
		Shutdown: func(*glsp.Context) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.shutdown = true
			return nil
		},
		SetTrace:                       func(*glsp.Context, *protocol.SetTraceParams) error { return nil },
		TextDocumentDidOpen:            s.didOpen,
		TextDocumentDidChange:          s.didChange,
		TextDocumentDidClose:           s.didClose,
		TextDocumentDidSave:            s.didSave,
		WorkspaceDidChangeWatchedFiles: s.didChangeWatchedFiles,
		TextDocumentHover:              s.hover,
		TextDocumentCompletion:         s.completion,
		TextDocumentDefinition:         s.definition,
		TextDocumentReferences:         s.references,
		TextDocumentDocumentSymbol:     s.documentSymbol,
		TextDocumentFormatting:         s.formatting,
		TextDocumentPrepareRename:      s.prepareRename,
		TextDocumentRename:             s.rename,
	}
}

func (s *Server) initialize(_ *glsp.Context, _ *protocol.InitializeParams) (any, error) {
	sync := protocol.TextDocumentSyncKindIncremental
	yes := true
	return protocol.InitializeResult{
		Capabilities: protocol.ServerCapabilities{
			TextDocumentSync: protocol.TextDocumentSyncOptions{
				OpenClose: &yes,
				Change:    &sync,
				Save:      protocol.SaveOptions{IncludeText: new(bool)},
			},
			CompletionProvider:         &protocol.CompletionOptions{TriggerCharacters: []string{".", "$", "\"", " ", "["}},
			HoverProvider:              true,
			DefinitionProvider:         true,
			ReferencesProvider:         true,
			DocumentSymbolProvider:     true,
			DocumentFormattingProvider: true,
			RenameProvider:             protocol.RenameOptions{PrepareProvider: &yes},
		},
		ServerInfo: &protocol.InitializeResultServerInfo{Name: "aguic", Version: &s.version},
	}, nil
}

// uriPath returns the file path of a file: URI, or "" for another URI.
func uriPath(uri string) string {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" {
		return ""
	}
	return filepath.Clean(filepath.FromSlash(u.Path))
}

// pathURI returns the file: URI of a path.
func pathURI(path string) string {
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(path)}
	return u.String()
}

// update sets a document's text; it is parsed when first needed.
func (s *Server) update(d *document, raw []byte) {
	d.raw = raw
	d.text = newText(raw)
	d.reg = s.reg
}

func (s *Server) didOpen(_ *glsp.Context, p *protocol.DidOpenTextDocumentParams) error {
	d := &document{uri: p.TextDocument.URI, path: uriPath(p.TextDocument.URI), version: p.TextDocument.Version}
	s.update(d, []byte(p.TextDocument.Text))
	s.mu.Lock()
	s.docs[d.uri] = d
	s.scheduleLocked(d)
	s.mu.Unlock()
	return nil
}

func (s *Server) didChange(_ *glsp.Context, p *protocol.DidChangeTextDocumentParams) error {
	s.mu.Lock()
	d := s.docs[p.TextDocument.URI]
	s.mu.Unlock()
	if d == nil {
		return fmt.Errorf("document %q is not open", p.TextDocument.URI)
	}
	raw := d.raw
	for _, c := range p.ContentChanges {
		raw = applyChange(raw, c)
	}
	nd := &document{uri: d.uri, path: d.path, version: p.TextDocument.Version, good: d.lastGood()}
	s.update(nd, raw)
	s.mu.Lock()
	s.docs[d.uri] = nd
	s.scheduleLocked(nd)
	s.mu.Unlock()
	return nil
}

func (s *Server) didClose(ctx *glsp.Context, p *protocol.DidCloseTextDocumentParams) error {
	s.pub.Lock()
	defer s.pub.Unlock()
	s.mu.Lock()
	d := s.docs[p.TextDocument.URI]
	delete(s.docs, p.TextDocument.URI)
	if d != nil {
		s.scheduleLocked(d)
	}
	wasShown := s.published[p.TextDocument.URI]
	delete(s.published, p.TextDocument.URI)
	s.mu.Unlock()
	if wasShown {
		ctx.Notify(string(protocol.ServerTextDocumentPublishDiagnostics), protocol.PublishDiagnosticsParams{URI: p.TextDocument.URI, Diagnostics: []protocol.Diagnostic{}})
	}
	return nil
}

func (s *Server) didSave(_ *glsp.Context, p *protocol.DidSaveTextDocumentParams) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.docs[p.TextDocument.URI]; d != nil {
		s.scheduleLocked(d)
	}
	return nil
}

func (s *Server) didChangeWatchedFiles(_ *glsp.Context, _ *protocol.DidChangeWatchedFilesParams) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.docs {
		s.scheduleLocked(d)
	}
	return nil
}

// doc returns the open document of uri, or an error for the client.
func (s *Server) doc(uri string) (*document, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.docs[uri]
	if d == nil {
		return nil, &jsonrpc2.Error{Code: codeRequestFailed, Message: fmt.Sprintf("document %q is not open", uri)}
	}
	return d, nil
}

// isUnder reports whether path is dir or below it.
func isUnder(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+string(filepath.Separator))
}
