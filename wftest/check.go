package wftest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/aguic/aguic/server/agui"
	"github.com/aguic/aguic/vm"
)

// check compares one expectation with what the test did so far, and
// records a failure or, with Options.Update, an update.
func (r *runner) check(e *Expect) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch e.Subject {
	case SubjectOutcome:
		r.checkOutcome(e)
	case SubjectReply:
		r.checkValue(e, r.reply(), true, true)
	case SubjectState:
		v, ok := lookup(canonical(r.hist.State), e.Path)
		r.checkValue(e, v, ok, false)
	case SubjectResult:
		var result any
		if r.turn.outcome.Status == vm.Finished {
			result = canonical(r.turn.outcome.Result)
		}
		v, ok := lookup(result, e.Path)
		r.checkValue(e, v, ok && result != nil, false)
	case SubjectMessages:
		v, ok := lookup(canonical(r.hist.Messages), e.Path)
		r.checkValue(e, v, ok, false)
	case SubjectContext:
		var root any
		ok := false
		if r.frame != nil {
			root, ok = r.frame.Context[e.Name]
		}
		v, found := lookup(canonical(root), e.Path)
		r.checkValue(e, v, ok && found, false)
	case SubjectToolCall, SubjectToolResult, SubjectEvent:
		r.checkEvents(e)
	}
}

// reply is the assistant's text the last turn streamed: each text
// message's deltas joined, the messages separated by newlines.
func (r *runner) reply() string {
	var parts []string
	open := map[string]int{} // message id → its index in parts
	for _, ev := range r.turn.events {
		switch ev.Type {
		case vm.TextStart:
			if ev.Role == "" || ev.Role == agui.RoleAssistant {
				open[ev.MessageID] = len(parts)
				parts = append(parts, "")
			}
		case vm.TextContent:
			if i, ok := open[ev.MessageID]; ok {
				parts[i] += ev.Delta
			}
		}
	}
	return strings.Join(parts, "\n")
}

// checkOutcome compares the last turn's outcome.
func (r *runner) checkOutcome(e *Expect) {
	o := r.turn.outcome
	actual := r.describeOutcome(o)
	spec := e.Outcome
	ok := spec.Status != "" && strings.HasPrefix(actual+" ", spec.Status+" ")
	if ok && len(spec.Names) > 0 {
		ok = actual == spec.Status+" "+strings.Join(spec.Names, ", ")
	}
	if ok && spec.Code != "" {
		ok = actual == "failed "+spec.Code
	}
	msg := ""
	if o.Err != nil {
		msg = o.Err.Message
	}
	if ok && spec.Msg.Kind != MatchNone {
		ok, _ = matches(spec.Msg, msg, true)
	}
	if ok {
		return
	}
	if r.opts.Update {
		r.res.Updates = append(r.res.Updates, Update{Line: e.Line, Start: e.Match.Start, End: e.Match.End, Text: spacer(e.Match) + actual})
		return
	}
	found := actual
	if o.Status == vm.Failed {
		found += " " + quote(failureText(o.Err))
	}
	if spec.Status == "" {
		r.failf(e.Line, e.Match.Start+1, "outcome: no expected outcome yet, found %s (aguic test --update writes it)", found)
		return
	}
	want := strings.TrimSpace(r.f.Lines[e.Line-1][e.Match.Start:])
	r.failf(e.Line, e.Match.Start+1, "outcome: expected %s, found %s", want, found)
}

// checkValue compares one value with the matcher of e. ok says whether
// the value is there at all; text says the subject is text (the reply).
func (r *runner) checkValue(e *Expect, v any, present, text bool) {
	m := e.Match
	if present && m.Kind != MatchNone {
		if ok, _ := matches(m, v, text); ok {
			return
		}
	}
	if r.opts.Update && m.Updatable() && present {
		r.res.Updates = append(r.res.Updates, Update{Line: e.Line, Start: m.Start, End: m.End, Text: spacer(m) + render(m, v, text)})
		return
	}
	col := m.Start + 1
	switch {
	case !present:
		r.failf(e.Line, col, "%s: expected %s, found nothing there", e.Target, describe(m))
	case m.Kind == MatchNone:
		r.failf(e.Line, col, "%s: no expected value yet, found %s (aguic test --update writes it)", e.Target, shown(v, text))
	default:
		r.failf(e.Line, col, "%s", mismatch(e.Target, m, v, text))
	}
}

// spacer is the space before a value written where none was.
func spacer(m Matcher) string {
	if m.Kind == MatchNone {
		return " "
	}
	return ""
}

// render writes v as the matcher m would expect it.
func render(m Matcher, v any, text bool) string {
	if text {
		s, _ := v.(string)
		return quote(s)
	}
	switch v.(type) {
	case map[string]any, []any:
		if m.Kind == MatchNone || m.Exact {
			return "= " + spaced(v)
		}
	}
	return spaced(v)
}

// checkEvents looks for the tool call, tool result or event of e among the
// last turn's events.
func (r *runner) checkEvents(e *Expect) {
	var seen []string // what there is, for the message
	found := false
	for _, c := range r.candidates(e) {
		seen = append(seen, c.show)
		if c.name != e.Name {
			continue
		}
		switch e.Subject {
		case SubjectToolResult:
			if e.Match.Kind == MatchNone {
				found = true
			} else if ok, _ := matches(e.Match, resultValue(e.Match, c.value), true); ok {
				found = true
			}
		default:
			if e.Match.Kind == MatchNone || subset(e.Match.Value, c.value) {
				found = true
			}
		}
		if found {
			break
		}
	}
	what := e.Target
	if e.Match.Kind != MatchNone {
		what += " " + strings.TrimSpace(r.f.Lines[e.Line-1][e.Match.Start:e.Match.End])
	}
	switch {
	case e.No && found:
		r.failf(e.Line, 1, "expected no %s, found one", what)
	case !e.No && !found:
		there := "none"
		if len(seen) > 0 {
			there = strings.Join(seen, "; ")
		}
		r.failf(e.Line, 1, "expected %s, found %s", what, there)
	}
}

// candidate is a tool call, a tool result or an event of the last turn.
type candidate struct {
	name  string // the tool's name, or the event's type
	value any    // the arguments, the result's content or the event as JSON
	show  string // how a failure shows it
}

// candidates are the things of the kind e looks for.
func (r *runner) candidates(e *Expect) []candidate {
	var out []candidate
	switch e.Subject {
	case SubjectToolCall, SubjectToolResult:
		names := map[string]string{} // tool call id → name
		args := map[string]string{}
		var order []string
		for _, ev := range r.turn.events {
			switch ev.Type {
			case vm.ToolCallStart:
				names[ev.ToolCallID] = ev.ToolCallName
				order = append(order, ev.ToolCallID)
			case vm.ToolCallArgs:
				args[ev.ToolCallID] += ev.Delta
			case vm.ToolCallResult:
				if e.Subject == SubjectToolResult {
					name := names[ev.ToolCallID]
					if name == "" {
						name = r.toolName(ev.ToolCallID)
					}
					out = append(out, candidate{name: name, value: ev.Content, show: fmt.Sprintf("tool result %s %s", name, quote(ev.Content))})
				}
			}
		}
		if e.Subject == SubjectToolCall {
			for _, id := range order {
				a, _, err := parseJSON(args[id])
				if err != nil {
					a = args[id]
				}
				out = append(out, candidate{name: names[id], value: a, show: fmt.Sprintf("tool call %s %s", names[id], args[id])})
			}
		}
	case SubjectEvent:
		for _, ev := range r.turn.events {
			a, ok := agui.FromVM(ev)
			if !ok {
				continue
			}
			data, err := json.Marshal(a)
			if err != nil {
				continue
			}
			v, _, _ := parseJSON(string(data))
			m, _ := v.(map[string]any)
			typ, _ := m["type"].(string)
			delete(m, "timestamp")
			show := typ
			if typ == e.Name {
				show = string(data)
			}
			out = append(out, candidate{name: typ, value: m, show: show})
		}
		if len(out) > 12 {
			var same []candidate
			for _, c := range out {
				if c.name == e.Name {
					same = append(same, c)
				}
			}
			if len(same) > 0 {
				out = same
			}
		}
	}
	return out
}

// matches reports whether v is what m wants. text says v is text to
// compare as it is.
func matches(m Matcher, v any, text bool) (bool, string) {
	switch m.Kind {
	case MatchEqual:
		if s, ok := v.(string); ok && text {
			want, isStr := m.Value.(string)
			return isStr && want == s, s
		}
		return reflect.DeepEqual(canonical(m.Value), canonical(v)), ""
	case MatchSubset:
		return subset(m.Value, canonical(v)), ""
	case MatchContains:
		return strings.Contains(asText(v), m.Text), ""
	case MatchRegexp:
		return m.Re.MatchString(asText(v)), ""
	}
	return false, ""
}

// asText is a string as it is, any other value as JSON.
func asText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return jsonText(v)
}

// subset reports whether got holds want: the keys of an object with
// values that hold theirs, a list of the same length whose elements hold
// theirs, an equal scalar.
func subset(want, got any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok || !subset(wv, gv) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !subset(w[i], g[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(canonical(want), canonical(got))
}

// lookup follows path from v.
func lookup(v any, path []PathKey) (any, bool) {
	for _, k := range path {
		if k.IsIndex {
			list, ok := v.([]any)
			i := k.Index
			if i < 0 {
				i += len(list)
			}
			if !ok || i < 0 || i >= len(list) {
				return nil, false
			}
			v = list[i]
			continue
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = obj[k.Key]; !ok {
			return nil, false
		}
	}
	return v, true
}

// quote writes s as a JSON string, HTML characters as they are.
func quote(s string) string { return jsonText(s) }

// describe is what m expects, for messages.
func describe(m Matcher) string {
	switch m.Kind {
	case MatchContains:
		return "text containing " + quote(m.Text)
	case MatchRegexp:
		return "text matching /" + m.Re.String() + "/"
	case MatchNone:
		return "a value"
	}
	return spaced(m.Value)
}

// shown is v for a message.
func shown(v any, text bool) string {
	if s, ok := v.(string); ok && text {
		return quote(s)
	}
	return spaced(v)
}

// resultValue is a tool result's content as m compares it: parsed when m
// wants a JSON value that is not a string and the content is JSON, else
// the text as it is.
func resultValue(m Matcher, content any) any {
	s, ok := content.(string)
	if !ok || (m.Kind != MatchSubset && (m.Kind != MatchEqual || isString(m.Value))) {
		return content
	}
	if v, end, err := parseJSON(s); err == nil && end == len(s) {
		return v
	}
	return content
}
