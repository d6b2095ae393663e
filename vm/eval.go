package vm

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"

	exprvm "github.com/expr-lang/expr/vm"
)

// environment returns the expression environment of the frame: every
// context root as "$root", and the locals by name. It is built once and
// kept current by set and setLocal.
func (r *runner) environment() map[string]any {
	if r.env == nil {
		r.env = make(map[string]any, len(r.frame.Context)+len(r.frame.Locals))
		for k, v := range r.frame.Context {
			r.env["$"+k] = v
		}
		for k, v := range r.frame.Locals {
			r.env[k] = v
		}
	}
	return r.env
}

// eval evaluates a compiled value: a template renders, an expression runs.
// An evaluation that may take long gives up when the run's context is
// done (see evalAsync); a quick one runs in place.
func (r *runner) eval(v *Value) (any, error) {
	switch {
	case v == nil:
		return nil, nil
	case v.Path != nil:
		return r.frame.Get(v.Path), nil
	case v.Template == nil && v.Expr == nil:
		return v.Source, nil // a bare workflow id
	}
	if r.ctx != nil && r.ctx.Done() != nil && !quick(v) {
		return r.evalAsync(v)
	}
	return compute(&r.vm, r.environment(), v)
}

// EvalConst evaluates a value that reads no context, such as an MCP
// server's declaration: literals, templates and builtin calls like env().
func EvalConst(v *Value) (any, error) {
	if v == nil {
		return nil, nil
	}
	if v.Template == nil && v.Expr == nil {
		return v.Source, nil
	}
	var m exprvm.VM
	return compute(&m, map[string]any{}, v)
}

// compute evaluates an expression or a template on m: a lone <<expr>>
// keeps its value's type; otherwise values join as text.
func compute(m *exprvm.VM, env map[string]any, v *Value) (any, error) {
	x := v.Expr
	if x == nil {
		x = v.Template.Single()
	}
	if x != nil {
		out, err := m.Run(x.Program, env)
		if err != nil {
			return nil, exprError(v, err)
		}
		return out, nil
	}
	t := v.Template
	if len(t.Parts) == 1 {
		return t.Parts[0].Text, nil
	}
	var b strings.Builder
	for _, p := range t.Parts {
		if p.Expr == nil {
			b.WriteString(p.Text)
			continue
		}
		out, err := m.Run(p.Expr.Program, env)
		if err != nil {
			return nil, exprError(v, err)
		}
		b.WriteString(Text(out))
	}
	return b.String(), nil
}

// maxAbandoned bounds the evaluations that go on running after their run
// gave up on them. Past it, a cancelled run waits for its evaluation to
// end, as if it could not be cancelled.
const maxAbandoned = 16

// abandoned counts the evaluations running after their run gave up on
// them.
var abandoned atomic.Int64

// evalAsync evaluates v in a goroutine of its own and waits for it or for
// the run's context, whichever is first. Expr's VM cannot be stopped
// midway: an evaluation the run gives up on runs on to its end in the
// background, on a VM and an environment map of its own (expr's memory
// budget caps its loops, maxAbandoned how many such evaluations run at
// once). The run ends right after (the error is ErrCancelled or
// ErrDeadline), so nothing writes the values it reads.
func (r *runner) evalAsync(v *Value) (any, error) {
	ctx := r.ctx
	if err := ctx.Err(); err != nil {
		return nil, stopped(err)
	}
	env := r.environment()
	type result struct {
		out any
		err error
	}
	done := make(chan result, 1)
	go func() {
		var m exprvm.VM
		out, err := compute(&m, env, v)
		done <- result{out, err}
	}()
	select {
	case res := <-done:
		return res.out, res.err
	case <-ctx.Done():
	}
	if abandoned.Add(1) > maxAbandoned {
		abandoned.Add(-1)
		res := <-done
		return res.out, res.err
	}
	go func() {
		<-done
		abandoned.Add(-1)
	}()
	r.env = nil // the abandoned evaluation keeps reading the old map
	return nil, stopped(ctx.Err())
}

// stopped is the error of an evaluation whose run's context is done.
func stopped(err error) *Error {
	if errors.Is(err, context.DeadlineExceeded) {
		return &Error{Code: ErrDeadline, Message: "the run's deadline passed"}
	}
	return &Error{Code: ErrCancelled, Message: "the run was cancelled"}
}

// quick reports whether v only reads, compares, computes and builds
// values: its expressions have no loop, no function call, no regular
// expression and no sorting. Its cost is bounded by its length times the
// size of the values it reads, so it runs in place.
func quick(v *Value) bool {
	if v.Expr != nil {
		return quickProgram(v.Expr.Program)
	}
	for _, p := range v.Template.Parts {
		if p.Expr != nil && !quickProgram(p.Expr.Program) {
			return false
		}
	}
	return true
}

func quickProgram(p *exprvm.Program) bool {
	for _, op := range p.Bytecode {
		if int(op) >= len(quickOps) || !quickOps[op] {
			return false
		}
	}
	return true
}

// quickOps are the opcodes of quick programs. A jump backward (a loop), a
// call, OpRange, OpMatches, OpSort… are not among them; OpCallBuiltin1
// is, as it calls only expr's one-argument builtins (len, int, upper…),
// which take time in proportion to their argument.
var quickOps = [...]bool{
	exprvm.OpPush: true, exprvm.OpInt: true, exprvm.OpPop: true, exprvm.OpStore: true,
	exprvm.OpLoadVar: true, exprvm.OpLoadConst: true, exprvm.OpLoadField: true, exprvm.OpLoadFast: true, exprvm.OpLoadEnv: true,
	exprvm.OpFetch: true, exprvm.OpFetchField: true,
	exprvm.OpTrue: true, exprvm.OpFalse: true, exprvm.OpNil: true,
	exprvm.OpNegate: true, exprvm.OpNot: true, exprvm.OpAnd: true, exprvm.OpOr: true,
	exprvm.OpEqual: true, exprvm.OpEqualInt: true, exprvm.OpEqualString: true,
	exprvm.OpLess: true, exprvm.OpMore: true, exprvm.OpLessOrEqual: true, exprvm.OpMoreOrEqual: true,
	exprvm.OpJump: true, exprvm.OpJumpIfTrue: true, exprvm.OpJumpIfFalse: true, exprvm.OpJumpIfNil: true, exprvm.OpJumpIfNotNil: true,
	exprvm.OpAdd: true, exprvm.OpSubtract: true, exprvm.OpMultiply: true, exprvm.OpDivide: true, exprvm.OpModulo: true, exprvm.OpExponent: true,
	exprvm.OpIn: true, exprvm.OpContains: true, exprvm.OpStartsWith: true, exprvm.OpEndsWith: true,
	exprvm.OpSlice: true, exprvm.OpArray: true, exprvm.OpMap: true, exprvm.OpLen: true, exprvm.OpCast: true, exprvm.OpDeref: true, exprvm.OpThrow: true,
	exprvm.OpCallBuiltin1: true,
}

func exprError(v *Value, err error) *Error {
	msg := err.Error()
	if i := strings.Index(msg, " ("); i > 0 && strings.Contains(msg[i:], "\n") {
		msg = msg[:i] // drop expr's own snippet: the span points into the .wf file
	}
	return &Error{Code: ErrExpr, Message: fmt.Sprintf("%s: %s", v.Source, msg), Span: v.Span}
}

// cond evaluates a condition; nil counts as false.
func (r *runner) cond(v *Value) (bool, error) {
	out, err := r.eval(v)
	if err != nil {
		return false, err
	}
	switch b := out.(type) {
	case bool:
		return b, nil
	case nil:
		return false, nil
	}
	return false, &Error{Code: ErrExpr, Message: fmt.Sprintf("%s: a condition must be boolean, found a %s", v.Source, kindOf(Normalize(out))), Span: v.Span}
}

// Same reports whether two values already normalized (see Normalize) are
// the same JSON value; numbers compare by value, 1 and 1.0 alike.
func Same(a, b any) bool { return equal(a, b) }

// equal reports whether two normalized values are the same JSON value.
func equal(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !equal(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case int:
		switch y := b.(type) {
		case int:
			return x == y
		case float64:
			return float64(x) == y
		}
		return false
	case float64:
		switch y := b.(type) {
		case int:
			return x == float64(y)
		case float64:
			return x == y
		}
		return false
	}
	return reflect.DeepEqual(a, b)
}

// Equal reports whether two values are the same JSON value.
func Equal(a, b any) bool { return equal(Normalize(a), Normalize(b)) }
