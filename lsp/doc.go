// Package lsp is the language server of the .wf language: it speaks the
// Language Server Protocol (3.16) over one stream, such as standard input
// and output, and answers an editor with what the compiler and the
// registry know.
//
// In: JSON-RPC messages framed with Content-Length headers. Out: the
// answers, and textDocument/publishDiagnostics notifications. A document
// is checked with the other .wf files of its directory and the
// directories below, as `aguic check <dir>` checks them, the text of open
// documents standing for the files on disk; its diagnostics are those of
// check, codes, notes and all. Hover, completion, definitions,
// references, rename, symbols and formatting read the syntax trees and the
// registry (vm.Registry), never the network.
//
// What stays true: positions on the wire count UTF-16 code units, as the
// protocol says, and are converted to and from the byte offsets the parser
// gives; a malformed message or an unknown method is answered with a
// JSON-RPC error and the server goes on; a document that does not parse
// keeps its last good tree for navigation and completion.
package lsp
