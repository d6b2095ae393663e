// Package vm holds what a compiled workflow is and what runs it.
//
// A Program is the compiler's output: every workflow of a set of .wf files
// lowered to a graph of Nodes with stable ids and named Edges, each
// expression already compiled by expr. The Registry describes the node kinds
// and builtin functions the stdlib provides; the compiler checks workflows
// against it and never imports the stdlib itself.
package vm
