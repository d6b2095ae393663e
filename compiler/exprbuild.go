package compiler

import (
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/checker"
	"github.com/expr-lang/expr/checker/nature"
	exprcompiler "github.com/expr-lang/expr/compiler"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/optimizer"
	"github.com/expr-lang/expr/parser"
	exprvm "github.com/expr-lang/expr/vm"
)

// buildExpr compiles text with opts as expr.Compile does, one phase at a
// time, so that a failure says by its type which phase failed and carries
// what that phase found: an *exprSyntaxError when the parser rejects the
// text, an *exprCheckError when the checker or the optimizer rejects the
// tree, a *notBoolError when a condition (asBool) has a type that is known
// and is not bool. The type of a condition is read from the checked tree,
// then its program converts its result to a bool, as with expr.AsBool.
func buildExpr(text string, opts []expr.Option, asBool bool) (*exprvm.Program, error) {
	config := conf.CreateNew()
	for _, op := range opts {
		op(config)
	}
	for name := range config.Disabled {
		delete(config.Builtins, name)
	}
	config.Check()

	tree, err := parser.ParseWithConfig(text, config)
	if err != nil {
		var fe *file.Error
		if errors.As(err, &fe) {
			return nil, &exprSyntaxError{fe}
		}
		return nil, err
	}
	if _, err := new(checker.Checker).PatchAndCheck(tree, config); err != nil {
		var fe *file.Error
		if errors.As(err, &fe) {
			return nil, &exprCheckError{err: fe, call: atCall(tree.Node, fe.Location, &config.NtCache)}
		}
		return nil, err
	}
	if asBool {
		if n := tree.Node.Nature(); !n.IsUnknown(&config.NtCache) && !n.IsBool() {
			return nil, &notBoolError{found: describeNature(n)}
		}
		expr.AsBool()(config)
	}
	if config.Optimize {
		if err := optimizer.Optimize(&tree.Node, config); err != nil {
			var fe *file.Error
			if errors.As(err, &fe) {
				return nil, &exprCheckError{err: fe}
			}
			return nil, err
		}
	}
	return exprcompiler.Compile(tree, config)
}

// exprSyntaxError is the error of expr's parser: the text is not an
// expression.
type exprSyntaxError struct {
	err *file.Error
}

func (e *exprSyntaxError) Error() string { return e.err.Error() }
func (e *exprSyntaxError) Unwrap() error { return e.err }

// exprCheckError is the error of expr's checker, or of its optimizer: the
// expression parses but its types do not fit, or a constant part of it
// fails (`1 % 0`).
type exprCheckError struct {
	err  *file.Error
	call bool // the error is about the arguments of a call
}

func (e *exprCheckError) Error() string { return e.err.Error() }
func (e *exprCheckError) Unwrap() error { return e.err }

// notBoolError is a condition whose type is known and is not bool.
type notBoolError struct {
	found string // the type in words: "an int"
}

func (e *notBoolError) Error() string {
	return "a condition must be boolean, found " + e.found
}

// atCall reports whether the checker's error at loc is about the arguments
// of a call: the checker puts such an error on the call, or on an argument
// whose type it knows. An argument it could not type failed on its own,
// and its error is not the call's.
func atCall(root ast.Node, loc file.Location, cache *nature.Cache) bool {
	v := &callFinder{loc: loc, cache: cache}
	ast.Walk(&root, v)
	return v.found
}

// callFinder looks for a call at loc, or a typed argument of one.
type callFinder struct {
	loc   file.Location
	cache *nature.Cache
	found bool
}

func (f *callFinder) Visit(node *ast.Node) {
	var args []ast.Node
	switch n := (*node).(type) {
	case *ast.CallNode:
		args = n.Arguments
	case *ast.BuiltinNode:
		args = n.Arguments
	default:
		return
	}
	if (*node).Location() == f.loc {
		f.found = true
	}
	for _, a := range args {
		if a != nil && a.Location() == f.loc && !a.Nature().IsUnknown(f.cache) {
			f.found = true
		}
	}
}

// describeNature names what the checker knows of a value's type for a
// message: "an int", "nil".
func describeNature(n *nature.Nature) string {
	if n.Type == nil {
		if n.Nil {
			return "nil"
		}
		return "an unknown type"
	}
	return describeType(n.Type)
}

var durationType = reflect.TypeFor[time.Duration]()

// describeType names a type for a message: "a string", "an int", "a list".
func describeType(t reflect.Type) string {
	switch k := t.Kind(); {
	case t == durationType:
		return "a duration"
	case k == reflect.String:
		return "a string"
	case k == reflect.Bool:
		return "a bool"
	case k >= reflect.Int && k <= reflect.Uint64:
		return "an int"
	case k == reflect.Float32 || k == reflect.Float64:
		return "a number"
	case k == reflect.Map:
		return "an object"
	case k == reflect.Slice || k == reflect.Array:
		return "a list"
	}
	return fmt.Sprint(t)
}
