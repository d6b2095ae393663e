package stdlib_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"

	"github.com/aguic/aguic/internal/vmtest"
	"github.com/aguic/aguic/stdlib"
	"github.com/aguic/aguic/vm"
)

// dataFlow wraps flow statements into a stateless workflow "w".
func dataFlow(flow string) string {
	return "wf 1\nworkflow w {\n  flow {\n" + flow + "\n  }\n}\n"
}

// dataEvents renders recorded events one per line, with the replace flag
// that vmtest.Format leaves out.
func dataEvents(rec *vmtest.Recorder) string {
	var b strings.Builder
	for _, e := range rec.Events {
		b.WriteString(vmtest.Format(e))
		if e.Replace != nil {
			fmt.Fprintf(&b, " replace=%v", *e.Replace)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// dataJSON renders v as compact JSON with sorted keys.
func dataJSON(t testing.TB, v any) string {
	t.Helper()
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// dataParse decodes a JSON literal of a test table.
func dataParse(t testing.TB, s string) any {
	t.Helper()
	if s == "" {
		return nil
	}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad test JSON %s: %v", s, err)
	}
	return vm.Normalize(v)
}

func hiddenState(f *vm.Frame) any {
	agent, _ := f.Context["agent"].(map[string]any)
	hidden, _ := agent["_hidden"].(map[string]any)
	return hidden["state"]
}

func agentState(f *vm.Frame) any {
	agent, _ := f.Context["agent"].(map[string]any)
	return agent["state"]
}

// a longText value that makes snapshots of the states below costly.
const longText = `"` + "lorem ipsum dolor sit amet, consectetur adipiscing elit" + `"`

func TestState(t *testing.T) {
	tests := []struct {
		name     string
		agent    string // the $agent the run starts with, as JSON
		flow     string
		want     string // the events
		wantErr  string // part of the run's error message
		state    string // $agent.state after the run; "" skips
		baseline string // $agent._hidden.state after the run; "" skips
	}{
		{
			name:  "no change, no event",
			agent: `{"state": {"a": 1}, "_hidden": {"state": {"a": 1}}}`,
			flow:  `state sync`,
		},
		{
			name: "no state and no baseline, no event",
			flow: `state sync`,
		},
		{
			name:     "first sync without a baseline sends a snapshot",
			agent:    `{"state": {"a": 1}}`,
			flow:     `state sync`,
			want:     `STATE_SNAPSHOT value={"a":1}`,
			baseline: `{"a": 1}`,
		},
		{
			name:     "a small change sends a delta",
			agent:    `{"state": {"mode": "assistant", "text": ` + longText + `}, "_hidden": {"state": {"mode": "assistant", "text": ` + longText + `}}}`,
			flow:     `set $agent.state.mode = "review"; set $agent.state.count = 2; state sync`,
			want:     `STATE_DELTA patch=[{"op":"add","path":"/count","value":2},{"op":"replace","path":"/mode","value":"review"}]`,
			baseline: `{"mode": "review", "count": 2, "text": ` + longText + `}`,
		},
		{
			name:     "a removed key and an edited list",
			agent:    `{"state": {"old": true, "list": [1, 2, 3], "text": ` + longText + `}, "_hidden": {"state": {"old": true, "list": [1, 2, 3], "text": ` + longText + `}}}`,
			flow:     `set $agent.state = {list: [1, 2, 4], text: $agent.state.text}; state sync`,
			want:     `STATE_DELTA patch=[{"op":"replace","path":"/list/2","value":4},{"op":"remove","path":"/old"}]`,
			baseline: `{"list": [1, 2, 4], "text": ` + longText + `}`,
		},
		{
			name:     "a null value stays in the patch",
			agent:    `{"state": {"a": 1, "text": ` + longText + `}, "_hidden": {"state": {"a": 1, "text": ` + longText + `}}}`,
			flow:     `set $agent.state.a = nil; set $agent.state.b = nil; state sync`,
			want:     `STATE_DELTA patch=[{"op":"replace","path":"/a","value":null},{"op":"add","path":"/b","value":null}]`,
			baseline: `{"a": null, "b": null, "text": ` + longText + `}`,
		},
		{
			name:  "an object replaced by a list is a snapshot",
			agent: `{"state": [1, 2], "_hidden": {"state": {"a": 1}}}`,
			flow:  `state sync`,
			want:  `STATE_SNAPSHOT value=[1,2]`,
		},
		{
			name:  "a scalar root is a snapshot",
			agent: `{"state": "b", "_hidden": {"state": "a"}}`,
			flow:  `state sync`,
			want:  `STATE_SNAPSHOT value=b`,
		},
		{
			name:     "a snapshot no longer than the delta wins",
			agent:    `{"state": {"c": 3}, "_hidden": {"state": {"a": 1, "b": 2}}}`,
			flow:     `state sync`,
			want:     `STATE_SNAPSHOT value={"c":3}`,
			baseline: `{"c": 3}`,
		},
		{
			name:  "snapshots_only",
			agent: `{"state": {"mode": "assistant", "text": ` + longText + `}, "_hidden": {"state": {"mode": "assistant", "text": ` + longText + `}}}`,
			flow:  `set $agent.state.mode = "review"; state sync { snapshots_only = true }`,
			want:  `STATE_SNAPSHOT value={"mode":"review","text":` + longText + `}`,
		},
		{
			name:  "the baseline follows: a second sync sends nothing",
			agent: `{"state": {"mode": "assistant"}}`,
			flow: `state sync
			       state sync
			       set $agent.state.mode = "review"
			       state sync
			       state sync`,
			want: `STATE_SNAPSHOT value={"mode":"assistant"}
STATE_SNAPSHOT value={"mode":"review"}`,
			baseline: `{"mode": "review"}`,
		},
		{
			name:     "the event does not share the state",
			agent:    `{"state": {"n": 1}}`,
			flow:     `state sync; set $agent.state.n = 2`,
			want:     `STATE_SNAPSHOT value={"n":1}`,
			state:    `{"n": 2}`,
			baseline: `{"n": 1}`,
		},
		{
			name:     "snapshot sets the state and the baseline",
			agent:    `{"state": {"mode": "x"}}`,
			flow:     `state snapshot {mode: "done"}; state sync`,
			want:     `STATE_SNAPSHOT value={"mode":"done"}`,
			state:    `{"mode": "done"}`,
			baseline: `{"mode": "done"}`,
		},
		{
			name:     "snapshot without an agent",
			flow:     `state snapshot {mode: "done"}; state sync`,
			want:     `STATE_SNAPSHOT value={"mode":"done"}`,
			state:    `{"mode": "done"}`,
			baseline: `{"mode": "done"}`,
		},
		{
			name:     "delta changes the state and the baseline",
			agent:    `{"state": {"mode": "a", "n": 1}, "_hidden": {"state": {"mode": "a", "n": 1}}}`,
			flow:     `state delta [{op: "replace", path: "/mode", value: "review"}, {op: "remove", path: "/n"}, {op: "add", path: "/x", value: nil}]; state sync`,
			want:     `STATE_DELTA patch=[{"op":"replace","path":"/mode","value":"review"},{"op":"remove","path":"/n"},{"op":"add","path":"/x","value":null}]`,
			state:    `{"mode": "review", "x": null}`,
			baseline: `{"mode": "review", "x": null}`,
		},
		{
			name:  "delta with move, copy and test",
			agent: `{"state": {"a": [1], "b": 2}, "_hidden": {"state": {"a": [1], "b": 2}}}`,
			flow:  `state delta [{op: "test", path: "/b", value: 2}, {op: "copy", from: "/a", path: "/c"}, {op: "move", from: "/b", path: "/a/-"}]`,
			want:  `STATE_DELTA patch=[{"op":"test","path":"/b","value":2},{"from":"/a","op":"copy","path":"/c"},{"from":"/b","op":"move","path":"/a/-"}]`,
			state: `{"a": [1, 2], "c": [1]}`,
		},
		{
			name:     "a delta that does not apply to the baseline drops it",
			agent:    `{"state": {"mode": "a"}, "_hidden": {"state": {}}}`,
			flow:     `state delta [{op: "replace", path: "/mode", value: "b"}]; state sync`,
			want:     "STATE_DELTA patch=[{\"op\":\"replace\",\"path\":\"/mode\",\"value\":\"b\"}]\nSTATE_SNAPSHOT value={\"mode\":\"b\"}",
			baseline: `{"mode": "b"}`,
		},
		{
			name:    "a delta that does not apply fails",
			agent:   `{"state": {"mode": "a"}}`,
			flow:    `state delta [{op: "add", path: "/b", value: 1}, {op: "replace", path: "/missing", value: 1}]`,
			wantErr: `state delta: operation 2 (replace "/missing") does not apply: the path does not exist`,
			state:   `{"mode": "a"}`,
		},
		{
			name:    "a failing test op fails",
			agent:   `{"state": {"mode": "a"}}`,
			flow:    `state delta [{op: "test", path: "/mode", value: "b"}]`,
			wantErr: `state delta: operation 1 (test "/mode") does not apply: the test failed`,
		},
		{
			name:    "an unknown op",
			agent:   `{"state": {}}`,
			flow:    `state delta [{op: "merge", path: "/a"}]`,
			wantErr: `state delta: operation 1: unknown op "merge": expected add, remove, replace, move, copy or test`,
		},
		{
			name:    "an add without a value",
			agent:   `{"state": {}}`,
			flow:    `state delta [{op: "add", path: "/a"}]`,
			wantErr: `state delta: operation 1: add at "/a" needs a value`,
		},
		{
			name:    "a path that is not a pointer",
			agent:   `{"state": {}}`,
			flow:    `state delta [{op: "remove", path: "a"}]`,
			wantErr: `state delta: operation 1: path "a" must be empty or start with "/"`,
		},
		{
			name:    "a move without from",
			agent:   `{"state": {}}`,
			flow:    `state delta [{op: "move", path: "/a"}]`,
			wantErr: `state delta: operation 1: missing from`,
		},
		{
			name:    "not a list",
			agent:   `{"state": {}, "patch": 3}`,
			flow:    `state delta $agent.patch`,
			wantErr: `state delta: expected a list of JSON Patch operations, found int`,
		},
		{
			name:    "not an operation",
			agent:   `{"state": {}}`,
			flow:    `state delta ["add"]`,
			wantErr: `state delta: operation 1: expected an object`,
		},
		{
			name:  "a negative index is not RFC 6902",
			agent: `{"state": {"a": [1, 2]}}`,
			flow:  `state delta [{op: "remove", path: "/a/-1"}]`,
			// json-patch's own words: no operation number is lost.
			wantErr: `state delta: operation 1 (remove "/a/-1") does not apply`,
		},
		{
			name:  "an empty delta is sent",
			agent: `{"state": {"a": 1}}`,
			flow:  `state delta []`,
			want:  `STATE_DELTA patch=[]`,
			state: `{"a": 1}`,
		},
		{
			name:  "a delta may replace the root",
			agent: `{"state": "x"}`,
			flow:  `state delta [{op: "replace", path: "", value: {a: 1}}]`,
			want:  `STATE_DELTA patch=[{"op":"replace","path":"","value":{"a":1}}]`,
			state: `{"a": 1}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := vmtest.Machine(t, dataFlow(tt.flow), stdlib.Options{})
			ctx := map[string]any{}
			if tt.agent != "" {
				ctx["agent"] = dataParse(t, tt.agent)
			}
			f, o, rec := vmtest.Run(t, m, "w", ctx)
			if tt.wantErr != "" {
				if o.Status != vm.Failed || !strings.Contains(o.Err.Message, tt.wantErr) {
					t.Fatalf("outcome %+v %v, want an error containing %q", o, o.Err, tt.wantErr)
				}
				if o.Err.Code != vm.ErrNode {
					t.Errorf("error code %q, want %q", o.Err.Code, vm.ErrNode)
				}
			} else if o.Status != vm.Finished {
				t.Fatalf("outcome %+v: %v", o, o.Err)
			}
			if got := strings.TrimSpace(dataEvents(rec)); got != tt.want {
				t.Errorf("events:\n%s\nwant:\n%s", got, tt.want)
			}
			if tt.state != "" {
				if got, want := dataJSON(t, agentState(f)), dataJSON(t, dataParse(t, tt.state)); got != want {
					t.Errorf("state %s, want %s", got, want)
				}
			}
			if tt.baseline != "" {
				if got, want := dataJSON(t, hiddenState(f)), dataJSON(t, dataParse(t, tt.baseline)); got != want {
					t.Errorf("baseline %s, want %s", got, want)
				}
			}
		})
	}
}

// TestStateDeltaMatchesState checks that a client applying the events of a
// run of syncs to what it held ends with the run's state.
func TestStateDeltaMatchesState(t *testing.T) {
	m := vmtest.Machine(t, dataFlow(`
		set $agent.state.items = [{id: 1, done: false}, {id: 2, done: false}]
		state sync
		set $agent.state.items[1].done = true
		set $agent.state.title = "Shopping <list> & more"
		state sync
		set $agent.state.items = $agent.state.items[0:1]
		state sync`), stdlib.Options{})
	text := strings.Repeat("x", 100)
	f, o, rec := vmtest.Run(t, m, "w", map[string]any{"agent": map[string]any{
		"state":   map[string]any{"text": text},
		"_hidden": map[string]any{"state": map[string]any{"text": text}},
	}})
	if o.Status != vm.Finished {
		t.Fatalf("outcome %+v: %v", o, o.Err)
	}
	client := any(map[string]any{"text": text})
	deltas := 0
	for _, e := range rec.Events {
		switch e.Type {
		case vm.StateSnapshot:
			client = e.Value
		case vm.StateDelta:
			deltas++
			next, err := applyJSONPatch(t, client, e.Patch)
			if err != nil {
				t.Fatalf("apply %s to %s: %v", dataJSON(t, e.Patch), dataJSON(t, client), err)
			}
			client = next
		}
	}
	if deltas != 3 {
		t.Errorf("%d deltas, want 3:\n%s", deltas, dataEvents(rec))
	}
	if got, want := dataJSON(t, client), dataJSON(t, agentState(f)); got != want {
		t.Errorf("the client holds %s, the run %s", got, want)
	}
}

// applyJSONPatch applies ops to doc as a client would, with json-patch.
func applyJSONPatch(t testing.TB, doc any, ops []any) (any, error) {
	p, err := jsonpatch.DecodePatch([]byte(dataJSON(t, ops)))
	if err != nil {
		return nil, err
	}
	out, err := p.Apply([]byte(dataJSON(t, doc)))
	if err != nil {
		return nil, err
	}
	return dataParse(t, string(out)), nil
}

func TestActivity(t *testing.T) {
	plan := `{"steps": [{"title": "Search the catalogue for the order", "status": "in_progress"}, {"title": "Write the answer", "status": "pending"}]}`
	tests := []struct {
		name    string
		flow    string
		want    string
		wantErr string
	}{
		{
			name: "the first sync is a snapshot",
			flow: `activity sync "plan-1" { type = "PLAN"; from = $input.plan }`,
			want: `ACTIVITY_SNAPSHOT msg=activity:plan-1 activity=PLAN value=` + dataJSON(t, dataParse(t, plan)) + ` replace=true`,
		},
		{
			name: "replace false on the first sync",
			flow: `activity sync "plan-1" { type = "PLAN"; from = $input.plan; replace = false }`,
			want: `ACTIVITY_SNAPSHOT msg=activity:plan-1 activity=PLAN value=` + dataJSON(t, dataParse(t, plan)) + ` replace=false`,
		},
		{
			name: "a change is a delta, no change nothing",
			flow: `activity sync "plan-1" { type = "PLAN"; from = $input.plan }
			       activity sync "plan-1" { type = "PLAN"; from = $input.plan }
			       set $input.plan.steps[0].status = "done"
			       activity sync "plan-1" { type = "PLAN"; from = $input.plan }`,
			want: `ACTIVITY_SNAPSHOT msg=activity:plan-1 activity=PLAN value=` + dataJSON(t, dataParse(t, plan)) + ` replace=true
ACTIVITY_DELTA msg=activity:plan-1 activity=PLAN patch=[{"op":"replace","path":"/steps/0/status","value":"done"}]`,
		},
		{
			name: "two activities keep their own baselines",
			flow: `activity sync "a" { type = "PLAN"; from = $input.plan }
			       activity sync "b" { type = "PLAN"; from = $input.plan }
			       set $input.plan.steps[1].status = "done"
			       activity sync "a" { type = "PLAN"; from = $input.plan }
			       activity sync "a" { type = "PLAN"; from = $input.plan }
			       activity sync "b" { type = "PLAN"; from = $input.plan }`,
			want: `ACTIVITY_SNAPSHOT msg=activity:a activity=PLAN value=` + dataJSON(t, dataParse(t, plan)) + ` replace=true
ACTIVITY_SNAPSHOT msg=activity:b activity=PLAN value=` + dataJSON(t, dataParse(t, plan)) + ` replace=true
ACTIVITY_DELTA msg=activity:a activity=PLAN patch=[{"op":"replace","path":"/steps/1/status","value":"done"}]
ACTIVITY_DELTA msg=activity:b activity=PLAN patch=[{"op":"replace","path":"/steps/1/status","value":"done"}]`,
		},
		{
			name: "later snapshots replace even when replace is false",
			flow: `activity sync "p" { type = "PLAN"; from = $input.small; replace = false }
			       set $input.small = {b: 2}
			       activity sync "p" { type = "PLAN"; from = $input.small; replace = false }`,
			want: `ACTIVITY_SNAPSHOT msg=activity:p activity=PLAN value={"a":1} replace=false
ACTIVITY_SNAPSHOT msg=activity:p activity=PLAN value={"b":2} replace=true`,
		},
		{
			name: "snapshots_only",
			flow: `activity sync "p" { type = "PLAN"; from = $input.plan }
			       set $input.plan.steps[0].status = "done"
			       activity sync "p" { type = "PLAN"; from = $input.plan; snapshots_only = true }`,
			want: `ACTIVITY_SNAPSHOT msg=activity:p activity=PLAN value=` + dataJSON(t, dataParse(t, plan)) + ` replace=true
ACTIVITY_SNAPSHOT msg=activity:p activity=PLAN value={"steps":[{"status":"done","title":"Search the catalogue for the order"},{"status":"pending","title":"Write the answer"}]} replace=true`,
		},
		{
			name: "a new type is a snapshot",
			flow: `activity sync "p" { type = "PLAN"; from = $input.small }
			       activity sync "p" { type = "CHECKLIST"; from = $input.small }`,
			want: `ACTIVITY_SNAPSHOT msg=activity:p activity=PLAN value={"a":1} replace=true
ACTIVITY_SNAPSHOT msg=activity:p activity=CHECKLIST value={"a":1} replace=true`,
		},
		{
			name: "snapshot and delta move the baseline",
			flow: `activity snapshot "p" { type = "PLAN"; content = {steps: ["a"]} }
			       activity delta "p" { type = "PLAN"; patch = [{op: "add", path: "/steps/-", value: "b"}] }
			       set $input.mirror = {steps: ["a", "b"]}
			       activity sync "p" { type = "PLAN"; from = $input.mirror }`,
			want: `ACTIVITY_SNAPSHOT msg=activity:p activity=PLAN value={"steps":["a"]} replace=true
ACTIVITY_DELTA msg=activity:p activity=PLAN patch=[{"op":"add","path":"/steps/-","value":"b"}]`,
		},
		{
			name: "a snapshot that does not replace keeps the baseline",
			flow: `activity snapshot "p" { type = "PLAN"; content = {a: 1} }
			       activity snapshot "p" { type = "PLAN"; content = {b: 2}; replace = false }
			       activity sync "p" { type = "PLAN"; from = $input.small }`,
			want: `ACTIVITY_SNAPSHOT msg=activity:p activity=PLAN value={"a":1} replace=true
ACTIVITY_SNAPSHOT msg=activity:p activity=PLAN value={"b":2} replace=false`,
		},
		{
			name: "a delta without a baseline is sent as it is",
			flow: `activity delta "p" { type = "PLAN"; patch = [{op: "replace", path: "/x", value: 1}] }
			       activity sync "p" { type = "PLAN"; from = $input.small }`,
			want: `ACTIVITY_DELTA msg=activity:p activity=PLAN patch=[{"op":"replace","path":"/x","value":1}]
ACTIVITY_SNAPSHOT msg=activity:p activity=PLAN value={"a":1} replace=true`,
		},
		{
			name: "a delta that does not apply to the baseline fails",
			flow: `activity snapshot "p" { type = "PLAN"; content = {a: 1} }
			       activity delta "p" { type = "PLAN"; patch = [{op: "remove", path: "/b"}] }`,
			want:    `ACTIVITY_SNAPSHOT msg=activity:p activity=PLAN value={"a":1} replace=true`,
			wantErr: `activity delta "p": operation 1 (remove "/b") does not apply: the path does not exist`,
		},
		{
			name:    "an invalid delta fails",
			flow:    `activity delta "p" { type = "PLAN"; patch = [{op: "replace", path: "/x"}] }`,
			wantErr: `activity delta "p": operation 1: replace at "/x" needs a value`,
		},
		{
			name:    "an empty id fails",
			flow:    `activity sync "" { type = "PLAN"; from = $input.plan }`,
			wantErr: `activity sync: the activity id must be a non-empty string, found ""`,
		},
		{
			name:    "content that is not an object fails",
			flow:    `activity snapshot "plan" { type = "PLAN"; content = [1, 2] }`,
			wantErr: `activity snapshot: an activity's content must be an object, found a list`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := vmtest.Machine(t, dataFlow(tt.flow), stdlib.Options{})
			_, o, rec := vmtest.Run(t, m, "w", map[string]any{"input": map[string]any{
				"plan":  dataParse(t, plan),
				"small": map[string]any{"a": 1},
			}})
			if tt.wantErr != "" {
				if o.Status != vm.Failed || !strings.Contains(o.Err.Message, tt.wantErr) {
					t.Fatalf("outcome %+v %v, want an error containing %q", o, o.Err, tt.wantErr)
				}
			} else if o.Status != vm.Finished {
				t.Fatalf("outcome %+v: %v", o, o.Err)
			}
			if got := strings.TrimSpace(dataEvents(rec)); got != tt.want {
				t.Errorf("events:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// TestActivityBaselineIsSaved runs a flow twice on one frame, reloaded in
// between as a checkpoint would: the second run's sync sends a delta.
func TestActivityBaselineIsSaved(t *testing.T) {
	m := vmtest.Machine(t, dataFlow(`activity sync "p" { type = "PLAN"; from = $input.plan }`), stdlib.Options{})
	f, o, rec := vmtest.Run(t, m, "w", map[string]any{"input": map[string]any{"plan": map[string]any{"n": 1, "text": strings.Repeat("x", 50)}}})
	if o.Status != vm.Finished || len(rec.Events) != 1 || rec.Events[0].Type != vm.ActivitySnapshot {
		t.Fatalf("first run: %+v\n%s", o, dataEvents(rec))
	}
	f = vmtest.Reload(t, f)
	f.Context["input"].(map[string]any)["plan"].(map[string]any)["n"] = 2
	rec = &vmtest.Recorder{}
	if o := m.Run(context.Background(), f, nil, vm.Observer{Events: rec}); o.Status != vm.Finished {
		t.Fatalf("second run: %+v: %v", o, o.Err)
	}
	want := `ACTIVITY_DELTA msg=activity:p activity=PLAN patch=[{"op":"replace","path":"/n","value":2}]`
	if got := strings.TrimSpace(dataEvents(rec)); got != want {
		t.Errorf("second run:\n%s\nwant:\n%s", got, want)
	}
}

// testServer is a local HTTP testServer whose handler a test sets.
type testServer struct {
	*httptest.Server
	tries atomic.Int64
}

func newTestServer(t *testing.T, h http.HandlerFunc) *testServer {
	s := &testServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.tries.Add(1)
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// runHTTP runs flow with $input.url set to the testServer's URL and returns
// the value the flow stored at $r.
func runHTTP(t *testing.T, s *testServer, flow string, opts stdlib.Options) (any, vm.Outcome) {
	t.Helper()
	m := vmtest.Machine(t, dataFlow(flow), opts)
	m.Deadline = time.Minute // a guard: a test that would wait longer fails
	f, o, _ := vmtest.Run(t, m, "w", map[string]any{"input": map[string]any{"url": s.URL}})
	return f.Context["r"], o
}

func TestHTTP(t *testing.T) {
	type request struct {
		Method, Path, ContentType, Token, Body string
	}
	tests := []struct {
		name    string
		flow    string
		handler http.HandlerFunc
		want    string // $r as JSON, with "<url>" for the testServer's URL
		req     string // the request the testServer saw, as JSON; "" skips
		tries   int64  // requests the testServer saw; 0 means 1
		wantErr string // "code: message part", with "<url>"
	}{
		{
			name: "GET with headers and a JSON response",
			flow: `http GET "<<$input.url>>/orders/7?key=secret" { headers = {"X-Token": "abc", "X-Count": 3} } -> $r`,
			handler: func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Query().Get("key") != "secret" || r.Header.Get("X-Count") != "3" {
					http.Error(w, "bad request", 400)
					return
				}
				w.Header().Set("Content-Type", "application/json; charset=utf-8")
				w.Header().Add("X-Multi", "1")
				w.Header().Add("X-Multi", "2")
				io.WriteString(w, `{"id": 7, "price": 9.5, "big": 9007199254740993, "tags": ["a"], "none": null}`)
			},
			want: `{"body":{"big":9007199254740993,"id":7,"none":null,"price":9.5,"tags":["a"]},"headers":{"content-length":"77","content-type":"application/json; charset=utf-8","date":"<date>","x-multi":"1, 2"},"status":200}`,
			req:  `{"Method":"GET","Path":"/orders/7","ContentType":"","Token":"abc","Body":""}`,
		},
		{
			name:    "POST a JSON body",
			flow:    `http POST "<<$input.url>>/orders" { body = {item: "book", qty: 2} } -> $r`,
			handler: echoHandler,
			want:    `{"body":"{\"item\":\"book\",\"qty\":2}","headers":"<any>","status":201}`,
			req:     `{"Method":"POST","Path":"/orders","ContentType":"application/json","Token":"","Body":"{\"item\":\"book\",\"qty\":2}"}`,
		},
		{
			name:    "POST a text body",
			flow:    `http POST "<<$input.url>>/notes" { body = "hello <<1 + 1>>" } -> $r`,
			handler: echoHandler,
			want:    `{"body":"hello 2","headers":"<any>","status":201}`,
			req:     `{"Method":"POST","Path":"/notes","ContentType":"text/plain; charset=utf-8","Token":"","Body":"hello 2"}`,
		},
		{
			name:    "a Content-Type header wins",
			flow:    `http PUT "<<$input.url>>/doc" { headers = {"content-type": "application/xml"}; body = "<a/>" } -> $r`,
			handler: echoHandler,
			want:    `{"body":"<a/>","headers":"<any>","status":201}`,
			req:     `{"Method":"PUT","Path":"/doc","ContentType":"application/xml","Token":"","Body":"<a/>"}`,
		},
		{
			name: "a JSON body that does not parse stays text",
			flow: `http GET "<<$input.url>>" -> $r`,
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/problem+json")
				io.WriteString(w, `{"a": 1} trailing`)
			},
			want: `{"body":"{\"a\": 1} trailing","headers":"<any>","status":200}`,
		},
		{
			name: "a +json body parses",
			flow: `http GET "<<$input.url>>" -> $r`,
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/problem+json")
				io.WriteString(w, `{"a": 1}`)
			},
			want: `{"body":{"a":1},"headers":"<any>","status":200}`,
		},
		{
			name: "a status outside 2xx fails",
			flow: `http GET "<<$input.url>>/missing?token=secret" -> $r`,
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "no such\norder", 404)
			},
			wantErr: `http: http GET <url>/missing?…: status 404 Not Found: "no such order"`,
		},
		{
			name: "allow_status",
			flow: `http DELETE "<<$input.url>>/x" { allow_status = [404, 409] } -> $r`,
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(409)
			},
			want: `{"body":"","headers":"<any>","status":409}`,
		},
		{
			name:    "retry on 503, then success",
			flow:    `http GET "<<$input.url>>" { retry = 3; backoff = "1ms..2ms" } -> $r`,
			handler: failFirst(2, 503, ""),
			want:    `{"body":"ok","headers":"<any>","status":200}`,
			tries:   3,
		},
		{
			name:    "retry on 429",
			flow:    `http GET "<<$input.url>>" { retry = 1; backoff = "1ms..1ms" } -> $r`,
			handler: failFirst(1, 429, ""),
			want:    `{"body":"ok","headers":"<any>","status":200}`,
			tries:   2,
		},
		{
			name:    "retries run out",
			flow:    `http GET "<<$input.url>>" { retry = 2; backoff = "1ms..1ms" } -> $r`,
			handler: failFirst(100, 502, ""),
			tries:   3,
			wantErr: `http: http GET <url>: status 502 Bad Gateway: "try` + ` 3" (after 3 tries)`,
		},
		{
			name:    "no retry on 400",
			flow:    `http GET "<<$input.url>>" { retry = 3; backoff = "1ms..1ms" } -> $r`,
			handler: failFirst(100, 400, ""),
			wantErr: `http: http GET <url>: status 400 Bad Request: "try 1"`,
		},
		{
			name:    "no retry of an allowed 503",
			flow:    `http GET "<<$input.url>>" { retry = 3; backoff = "1ms..1ms"; allow_status = [503] } -> $r`,
			handler: failFirst(100, 503, ""),
			want:    `{"body":"try 1","headers":"<any>","status":503}`,
		},
		{
			// Without Retry-After the backoff would wait an hour: the
			// run's deadline would end the test.
			name:    "Retry-After 0 retries at once",
			flow:    `http GET "<<$input.url>>" { retry = 1; backoff = "1h..1h" } -> $r`,
			handler: failFirst(1, 503, "0"),
			want:    `{"body":"ok","headers":"<any>","status":200}`,
			tries:   2,
		},
		{
			name:    "Retry-After as a date in the past",
			flow:    `http GET "<<$input.url>>" { retry = 1; backoff = "1h..1h" } -> $r`,
			handler: failFirst(1, 503, "Wed, 21 Oct 2015 07:28:00 GMT"),
			want:    `{"body":"ok","headers":"<any>","status":200}`,
			tries:   2,
		},
		{
			name:    "Retry-After waits at most the longest backoff",
			flow:    `http GET "<<$input.url>>" { retry = 1; backoff = "1ms..1ms" } -> $r`,
			handler: failFirst(1, 429, "3600"),
			want:    `{"body":"ok","headers":"<any>","status":200}`,
			tries:   2,
		},
		{
			name: "a timeout per try",
			// Long enough for each try to reach the server on a busy machine.
			flow: `http GET "<<$input.url>>" { timeout = "250ms"; retry = 1; backoff = "1ms..1ms" } -> $r`,
			handler: func(w http.ResponseWriter, r *http.Request) {
				<-r.Context().Done() // until the client gives up
			},
			tries:   2,
			wantErr: `timeout: http GET <url>: no response within 250ms (after 2 tries)`,
		},
		{
			name: "a body that is too large",
			flow: `http GET "<<$input.url>>" -> $r`,
			handler: func(w http.ResponseWriter, r *http.Request) {
				chunk := strings.Repeat("x", 1<<20)
				for range 10 {
					io.WriteString(w, chunk)
				}
				io.WriteString(w, "!")
			},
			wantErr: `http: http GET <url>: the response body is larger than 10 MiB`,
		},
		{
			name:    "not an http url",
			flow:    `http GET "<<'ftp://user:pw@example.com/x'>>" -> $r`, // computed: a literal is a compile error (WF114)
			handler: echoHandler,
			tries:   -1,
			wantErr: `node: http GET: invalid url "ftp://example.com/x": expected an absolute http or https url`,
		},
		{
			name:    "headers that are not strings",
			flow:    `http GET "<<$input.url>>" { headers = {"X-List": [1]} } -> $r`,
			handler: echoHandler,
			tries:   -1,
			wantErr: `node: http GET <url>: header "X-List" must be a string, found a list`,
		},
		{
			name:    "a bad timeout",
			flow:    `http GET "<<$input.url>>" { timeout = $input.url } -> $r`,
			handler: echoHandler,
			tries:   -1,
			wantErr: `node: timeout expects a positive duration such as "20s", found "<url>"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen atomic.Pointer[request]
			s := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				seen.Store(&request{r.Method, r.URL.Path, r.Header.Get("Content-Type"), r.Header.Get("X-Token"), string(body)})
				r.Body = io.NopCloser(strings.NewReader(string(body)))
				tt.handler(w, r)
			})
			res, o := runHTTP(t, s, tt.flow, stdlib.Options{})
			if tt.wantErr != "" {
				code, msg, _ := strings.Cut(strings.ReplaceAll(tt.wantErr, "<url>", s.URL), ": ")
				if o.Status != vm.Failed || o.Err.Code != code || o.Err.Message != msg {
					t.Fatalf("outcome %+v %v\nwant %s: %s", o, o.Err, code, msg)
				}
			} else if o.Status != vm.Finished {
				t.Fatalf("outcome %+v: %v", o, o.Err)
			}
			if tt.want != "" {
				got := res.(map[string]any)
				if strings.Contains(tt.want, `"headers":"<any>"`) {
					got["headers"] = "<any>"
				} else if h, ok := got["headers"].(map[string]any); ok && h["date"] != nil {
					h["date"] = "<date>"
				}
				if g := dataJSON(t, got); g != tt.want {
					t.Errorf("result\n%s\nwant\n%s", g, tt.want)
				}
			}
			if tt.req != "" {
				if got := dataJSON(t, seen.Load()); got != tt.req {
					t.Errorf("request\n%s\nwant\n%s", got, tt.req)
				}
			}
			want := tt.tries
			switch want {
			case 0:
				want = 1
			case -1:
				want = 0
			}
			if got := s.tries.Load(); got != want {
				t.Errorf("%d requests, want %d", got, want)
			}
		})
	}
}

// echoHandler answers 201 with the request body as text.
func echoHandler(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(201)
	w.Write(body)
}

// failFirst answers the first n requests with status (and a Retry-After
// header when retryAfter is set), then "ok".
func failFirst(n int, status int, retryAfter string) http.HandlerFunc {
	var tries atomic.Int64
	return func(w http.ResponseWriter, r *http.Request) {
		try := tries.Add(1)
		if try > int64(n) {
			io.WriteString(w, "ok")
			return
		}
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.WriteHeader(status)
		io.WriteString(w, "try "+strconv.FormatInt(try, 10))
	}
}

func TestHTTPUsesTheGivenClient(t *testing.T) {
	s := newTestServer(t, echoHandler)
	var trips atomic.Int64
	client := &http.Client{Transport: rtFunc(func(r *http.Request) (*http.Response, error) {
		trips.Add(1)
		return http.DefaultTransport.RoundTrip(r)
	})}
	_, o := runHTTP(t, s, `http GET "<<$input.url>>" -> $r`, stdlib.Options{HTTPClient: client})
	if o.Status != vm.Finished || trips.Load() != 1 {
		t.Fatalf("outcome %+v %v, %d round trips", o, o.Err, trips.Load())
	}
}

type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestHTTPConnectionRefused(t *testing.T) {
	s := newTestServer(t, echoHandler)
	s.Close()
	_, o := runHTTP(t, s, `http GET "<<$input.url>>" { retry = 1; backoff = "1ms..1ms" } -> $r`, stdlib.Options{})
	if o.Status != vm.Failed || o.Err.Code != vm.ErrHTTP || !strings.HasPrefix(o.Err.Message, "http GET "+s.URL+": ") || !strings.HasSuffix(o.Err.Message, "(after 2 tries)") {
		t.Fatalf("outcome %+v %v", o, o.Err)
	}
}

// TestHTTPCancel cancels the run while a request is in flight.
func TestHTTPCancel(t *testing.T) {
	started := make(chan struct{})
	s := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done()
	})
	m := vmtest.Machine(t, dataFlow(`http GET "<<$input.url>>" { retry = 5 } -> $r`), stdlib.Options{})
	f, err := m.NewFrame("w", map[string]any{"input": map[string]any{"url": s.URL}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan vm.Outcome)
	go func() { done <- m.Run(ctx, f, nil, vm.Observer{Events: &vmtest.Recorder{}}) }()
	<-started
	cancel()
	if o := <-done; o.Status != vm.Cancelled {
		t.Fatalf("outcome %+v %v, want cancelled", o, o.Err)
	}
	if n := s.tries.Load(); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

// TestHTTPCatch checks that try/catch sees an http error's code.
func TestHTTPCatch(t *testing.T) {
	s := newTestServer(t, failFirst(100, 500, ""))
	m := vmtest.Machine(t, dataFlow(`try { http GET "<<$input.url>>" -> $r } catch e { set $code = e.code }`), stdlib.Options{})
	f, o, _ := vmtest.Run(t, m, "w", map[string]any{"input": map[string]any{"url": s.URL}})
	if o.Status != vm.Finished || f.Context["code"] != vm.ErrHTTP {
		t.Fatalf("outcome %+v %v, code %v", o, o.Err, f.Context["code"])
	}
}

const callProgram = `wf 1
workflow parent {
  flow {
    call child { input = {n: $input.n}; retry = $input.retry; backoff = "1ms..1ms" } -> $out
  }
}
workflow child {
  flow {
    state snapshot {n: $input.n}
    if $input.n < 0 { fail "negative: <<$input.n>>" }
    output $input.n * 10
  }
}
`

func TestCall(t *testing.T) {
	tests := []struct {
		name    string
		n       int
		retry   int
		want    string
		wantErr string
		out     any
	}{
		{
			name: "the child's output",
			n:    2,
			out:  20,
			want: `SUBAGENT_STARTED name=child run=sub-f1-1
STATE_SNAPSHOT run=sub-f1-1 value={"n":2}
SUBAGENT_FINISHED name=child run=sub-f1-1 value=20`,
		},
		{
			name:    "a child that fails",
			n:       -1,
			wantErr: `workflow "child" failed: negative: -1`,
			want: `SUBAGENT_STARTED name=child run=sub-f1-1
STATE_SNAPSHOT run=sub-f1-1 value={"n":-1}
SUBAGENT_ERROR content="negative: -1" name=child run=sub-f1-1`,
		},
		{
			name:    "a child that fails is started again",
			n:       -1,
			retry:   1,
			wantErr: `workflow "child" failed: negative: -1 (after 2 tries)`,
			want: `SUBAGENT_STARTED name=child run=sub-f1-1
STATE_SNAPSHOT run=sub-f1-1 value={"n":-1}
SUBAGENT_ERROR content="negative: -1" name=child run=sub-f1-1
SUBAGENT_STARTED name=child run=sub-f1-2
STATE_SNAPSHOT run=sub-f1-2 value={"n":-1}
SUBAGENT_ERROR content="negative: -1" name=child run=sub-f1-2`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := vmtest.Machine(t, callProgram, stdlib.Options{})
			f, o, rec := vmtest.Run(t, m, "parent", map[string]any{"input": map[string]any{"n": tt.n, "retry": tt.retry}})
			if tt.wantErr != "" {
				if o.Status != vm.Failed || o.Err.Code != vm.ErrCall || o.Err.Message != tt.wantErr {
					t.Fatalf("outcome %+v %v, want %s", o, o.Err, tt.wantErr)
				}
			} else if o.Status != vm.Finished || f.Context["out"] != tt.out {
				t.Fatalf("outcome %+v %v, $out %v, want %v", o, o.Err, f.Context["out"], tt.out)
			}
			if got := strings.TrimSpace(dataEvents(rec)); got != tt.want {
				t.Errorf("events:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestCallTimeout(t *testing.T) {
	s := newTestServer(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	m := vmtest.Machine(t, `wf 1
workflow parent {
  flow {
    call child { input = {url: $input.url}; timeout = "20ms" } -> $out
  }
}
workflow child {
  flow {
    http GET "<<$input.url>>" { timeout = "1h" } -> $r
  }
}
`, stdlib.Options{})
	m.Deadline = time.Minute
	_, o, rec := vmtest.Run(t, m, "parent", map[string]any{"input": map[string]any{"url": s.URL}})
	if o.Status != vm.Failed || o.Err.Code != vm.ErrTimeout || o.Err.Message != "call child: the workflow did not finish within 20ms" {
		t.Fatalf("outcome %+v %v", o, o.Err)
	}
	want := "SUBAGENT_STARTED name=child run=sub-f1-1\nSUBAGENT_ERROR content=\"timed out\" name=child run=sub-f1-1"
	if got := strings.TrimSpace(dataEvents(rec)); got != want {
		t.Errorf("events:\n%s\nwant:\n%s", got, want)
	}
}

// BenchmarkStateSync runs `state sync` on a state of 100 keys of which
// one changed since the baseline.
func BenchmarkStateSync(b *testing.B) {
	m := vmtest.Machine(b, dataFlow(`state sync`), stdlib.Options{})
	state, base := map[string]any{}, map[string]any{}
	for i := range 100 {
		k := fmt.Sprintf("key%03d", i)
		state[k] = map[string]any{"title": "item " + k, "done": false, "n": i}
		base[k] = map[string]any{"title": "item " + k, "done": false, "n": i}
	}
	state["key042"] = map[string]any{"title": "item key042", "done": true, "n": 42}
	agent := map[string]any{"state": state, "_hidden": map[string]any{}}
	f, err := m.NewFrame("w", map[string]any{"agent": agent})
	if err != nil {
		b.Fatal(err)
	}
	agent = f.Context["agent"].(map[string]any)
	hidden := agent["_hidden"].(map[string]any)
	var deltas int
	sink := vm.SinkFunc(func(e vm.Event) error {
		if e.Type == vm.StateDelta {
			deltas++
		}
		return nil
	})
	b.ReportAllocs()
	for b.Loop() {
		hidden["state"] = base // the sync replaces it, never changes it
		if o := m.Run(context.Background(), f, nil, vm.Observer{Events: sink}); o.Status != vm.Finished {
			b.Fatalf("%+v %v", o, o.Err)
		}
	}
	if deltas == 0 {
		b.Fatal("no delta")
	}
}

// BenchmarkHTTPGet runs an http GET of a small JSON document from a local
// testServer.
func BenchmarkHTTPGet(b *testing.B) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id": 7, "name": "book", "tags": ["a", "b"]}`)
	}))
	defer s.Close()
	m := vmtest.Machine(b, dataFlow(`http GET "<<$input.url>>/orders/7" -> $r`), stdlib.Options{})
	f, err := m.NewFrame("w", map[string]any{"input": map[string]any{"url": s.URL}})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if o := m.Run(context.Background(), f, nil, vm.Observer{}); o.Status != vm.Finished {
			b.Fatalf("%+v %v", o, o.Err)
		}
	}
}
