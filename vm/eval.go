package vm

import (
	"fmt"
	"reflect"
	"strings"
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
func (r *runner) eval(v *Value) (any, error) {
	switch {
	case v == nil:
		return nil, nil
	case v.Path != nil:
		return r.frame.Get(v.Path), nil
	case v.Template != nil:
		return r.render(v)
	case v.Expr != nil:
		out, err := r.run(v.Expr)
		if err != nil {
			return nil, r.exprError(v, err)
		}
		return out, nil
	}
	return v.Source, nil // a bare workflow id
}

func (r *runner) run(x *Expr) (any, error) {
	return r.vm.Run(x.Program, r.environment())
}

// render renders a template: a lone <<expr>> keeps its value's type;
// otherwise values join as text.
func (r *runner) render(v *Value) (any, error) {
	t := v.Template
	if x := t.Single(); x != nil {
		out, err := r.run(x)
		if err != nil {
			return nil, r.exprError(v, err)
		}
		return out, nil
	}
	if len(t.Parts) == 1 {
		return t.Parts[0].Text, nil
	}
	var b strings.Builder
	for _, p := range t.Parts {
		if p.Expr == nil {
			b.WriteString(p.Text)
			continue
		}
		out, err := r.run(p.Expr)
		if err != nil {
			return nil, r.exprError(v, err)
		}
		b.WriteString(Text(out))
	}
	return b.String(), nil
}

func (r *runner) exprError(v *Value, err error) *Error {
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
