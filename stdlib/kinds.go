package stdlib

import "github.com/aguic/aguic/vm"

// kinds returns a fresh declaration of every node kind, each with its
// Exec and hooks, in the order of the language reference. A kind is
// declared, run and described in a file of its own (say.go, model.go,
// http.go…), or with its family (state.go, activity.go).
func kinds(opts Options) []*vm.KindSpec {
	return []*vm.KindSpec{
		say(), model(opts), frontendTool(), backendTool(), suspend(), interrupt(), sleep(),
		stateSync(), stateSnapshot(), stateDelta(),
		activitySync(), activitySnapshot(), activityDelta(),
		emit(), httpKind(httpClient(opts)), call(), mcpKind(opts.MCP), output(),
	}
}
