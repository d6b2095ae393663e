package server

import (
	"context"
	"errors"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/aguic/aguic/server/agui"
	"github.com/aguic/aguic/vm"
	"github.com/aguic/aguic/vm/store"
)

// HookRequest is what the request hook (Config.Hook) sees of a run
// request before anything runs, and what it may add to.
type HookRequest struct {
	// Request is the request's body as it was decoded; the hook reads it.
	Request *RunAgentInput
	// Headers is a copy of the request's headers, Authorization among
	// them. The hook may validate a bearer token it finds here; it must
	// keep only what it derives (a user id, roles, a tenant) in Context
	// and Agent, never the token: they are stored with the thread.
	Headers http.Header

	ThreadID     string // the request's thread
	WorkflowID   string // the workflow the request resolved to
	Conversation bool   // whether that workflow keeps the conversation
	// Scope is the thread's tenancy scope: the identity's, the scope
	// header's, or "default". The hook may set another (printable ASCII,
	// at most 256 bytes): the run's thread is then in that scope.
	Scope string

	// Context is added to the workflow's context before the turn. For a
	// stateless workflow it is the root context of the run, and holds
	// "agent" (Agent itself); for a conversation it starts empty and is
	// merged, objects key by key, into the context the thread saved.
	Context map[string]any
	// Agent is $agent of the turn, built from the request: it replaces
	// the thread's $agent whole. A key "agent" of Context never wins over
	// it.
	Agent map[string]any
}

// hookRequest calls the hook, when there is one, on the request of a run
// of wf on key; the answer holds the context and the agent the run starts
// with. A hook's error is the request's refusal.
func (s *Server) hookRequest(ctx context.Context, in *RunAgentInput, wf *vm.Workflow, key store.Key, agent map[string]any) (*HookRequest, error) {
	hr := &HookRequest{
		Request:      in,
		ThreadID:     key.Thread,
		WorkflowID:   wf.ID,
		Conversation: wf.Conversation,
		Scope:        key.Scope,
		Context:      map[string]any{},
		Agent:        agent,
	}
	if !wf.Conversation {
		hr.Context["agent"] = agent
	}
	if s.cfg.Hook != nil {
		hr.Headers = headersOf(ctx)
		if err := s.cfg.Hook(ctx, hr); err != nil {
			return nil, err
		}
		if err := checkScope(hr.Scope); err != nil || hr.Scope == "" {
			s.log.Warn("the run hook set a scope that is not one: the run is refused", "workflow", wf.ID, "thread", key.Thread, "scope", hr.Scope, "error", err)
			return nil, errHookFailed
		}
	}
	if hr.Context == nil {
		hr.Context = map[string]any{}
	}
	if hr.Agent == nil {
		hr.Agent = map[string]any{}
	}
	if wf.Conversation {
		delete(hr.Context, "agent")
	} else {
		hr.Context["agent"] = hr.Agent
	}
	return hr, nil
}

// rejected is the answer to a request the hook refused: RUN_STARTED, then
// RUN_ERROR with the hook's message; or, when the hook's error wraps a
// huma.StatusError, that status before any stream. Nothing ran, nothing
// is stored.
func (s *Server) rejected(in *RunAgentInput, key store.Key, err error) (reply, error) {
	s.log.Info("run rejected", "workflow", key.Workflow, "thread", key.Thread, "run", in.RunID, "error", err.Error())
	var se huma.StatusError
	if errors.As(err, &se) {
		return reply{}, err
	}
	r := newRun(in.RunID, key, s.now)
	r.pushEvent(0, agui.RunStarted(in.ThreadID, in.RunID, in.ParentRunID, nil), false)
	r.pushEvent(0, agui.RunError(err.Error(), "rejected"), true)
	close(r.done)
	return reply{run: r}, nil
}
