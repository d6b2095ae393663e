package stdlib

import (
	"maps"
	"slices"
	"strings"

	"github.com/aguic/aguic/vm"
)

// PredictStateEvent is the name of the CUSTOM event that tells the client,
// before a tool call, which keys of its shared state the call's arguments
// predict while they stream: its value is a list of {state_key, tool,
// tool_argument}, the shape AG-UI's clients (CopilotKit among them) read.
const PredictStateEvent = "PredictState"

// predictKey declares the predict key of a kind that calls tools; of names
// the key that says which arguments exist (see vm.KeySpec.Of).
func predictKey(of, doc string) vm.KeySpec {
	return vm.KeySpec{Name: "predict", Type: vm.TypePredictions, Of: of, Doc: doc}
}

// predictEvent is the PredictState event of entries, sent before the tool
// call callID. The event carries the call's id, which the client does not
// see, so that hiding the call from replay (an abandoned frontend_tool,
// hide_after) hides its prediction too.
func predictEvent(entries []any, callID string) vm.Event {
	return vm.Event{Type: vm.Custom, Name: PredictStateEvent, Value: entries, ToolCallID: callID}
}

// predictEntry is one entry of a PredictState event: the client sets its
// state's stateKey to the argument of tool's call as it streams.
func predictEntry(stateKey, tool, argument string) map[string]any {
	return map[string]any{"state_key": stateKey, "tool": tool, "tool_argument": argument}
}

// readPredict reads the node's predict key: each state key with what
// predicts it, a string. The compiler checks the literal it must be; these
// checks keep a hand-made program honest.
func readPredict(c *vm.Call) (map[string]string, error) {
	var m map[string]any
	if err := c.UnpackKeys("predict", &m); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(m))
	for key, v := range m {
		s, ok := v.(string)
		if key == "" || !ok || s == "" {
			return nil, vm.Errorf(vm.ErrNode, "predict: expected state keys mapped to tool arguments, found %q: %s", key, vm.Describe(v))
		}
		out[key] = s
	}
	return out, nil
}

// callPredictions is what the predict key of a tool-call node (a call of
// tool with args) declares, as PredictState entries sorted by state key;
// nil when the node predicts nothing. A predicted argument the call does
// not have is an error: the client would wait for it in vain.
func callPredictions(c *vm.Call, tool string, args map[string]any) ([]any, error) {
	m, err := readPredict(c)
	if err != nil || len(m) == 0 {
		return nil, err
	}
	var entries []any
	for _, key := range slices.Sorted(maps.Keys(m)) {
		if _, ok := args[m[key]]; !ok {
			return nil, vm.Errorf(vm.ErrNode, "predict: the call of %q has no argument %q to predict the state key %q from", tool, m[key], key)
		}
		entries = append(entries, predictEntry(key, tool, m[key]))
	}
	return entries, nil
}

// modelPredictions is what the predict key of a model node declares, each
// state key predicted by "tool.argument": the PredictState entries of each
// tool, sorted by state key; nil when the node predicts nothing.
func modelPredictions(c *vm.Call) (map[string][]any, error) {
	m, err := readPredict(c)
	if err != nil || len(m) == 0 {
		return nil, err
	}
	out := map[string][]any{}
	for _, key := range slices.Sorted(maps.Keys(m)) {
		tool, arg, ok := strings.Cut(m[key], ".")
		if !ok || tool == "" || arg == "" {
			return nil, vm.Errorf(vm.ErrNode, "predict: the state key %q must be predicted by a tool's argument written tool.argument, found %q", key, m[key])
		}
		out[tool] = append(out[tool], predictEntry(key, tool, arg))
	}
	return out, nil
}
