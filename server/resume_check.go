package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/aguic/aguic/vm"
	"github.com/aguic/aguic/vm/store"
)

// checkResume refuses a run request that answers interrupts (its resume
// entries) on a thread that does not wait for interrupt answers: 409,
// with what the thread waits for. Its workflow would refuse the answers
// at the node that waits (code invalid_resume) or, on a thread that waits
// for nothing, run again as if they were not there. A thread that waits
// for interrupt answers takes the request: the interrupt node checks the
// answers themselves.
func (s *Server) checkResume(ctx context.Context, key store.Key, wf *vm.Workflow, in *RunAgentInput) error {
	if len(in.Resume) == 0 {
		return nil
	}
	if !wf.Conversation {
		return huma.Error409Conflict(fmt.Sprintf("workflow %q is not a conversation: its threads never wait for interrupt answers, so resume has nothing to answer", wf.ID))
	}
	th, err := s.cfg.Store.Thread(ctx, key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return huma.Error409Conflict(fmt.Sprintf("workflow %q has no thread %q yet, so no interrupt waits for an answer: send the first turn without resume", key.Workflow, key.Thread))
	case err != nil:
		return storeFailed("reading the thread failed", err)
	}
	where := fmt.Sprintf("thread %q of workflow %q", key.Thread, key.Workflow)
	switch th.Status {
	case store.Suspended:
	case store.Running:
		return nil // a run holds the thread: admit answers 409
	default:
		return huma.Error409Conflict(fmt.Sprintf("%s is %s and waits for nothing, so no interrupt waits for an answer: send the next turn without resume", where, th.Status))
	}
	var w vm.Wait
	if json.Unmarshal(th.Wait, &w) != nil {
		return nil // the run finds out
	}
	switch w.Kind {
	case vm.WaitUser:
		return huma.Error409Conflict(fmt.Sprintf("%s waits for the next user message, not for interrupt answers: send it in messages, without resume", where))
	case vm.WaitTool:
		return huma.Error409Conflict(fmt.Sprintf("%s waits for the result of the frontend tool call %s, not for interrupt answers: send it as a tool message, without resume", where, quoted(w.ToolCallIDs)))
	}
	return nil
}

// quoted lists words as Go strings, separated by commas.
func quoted(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = strconv.Quote(w)
	}
	return strings.Join(q, ", ")
}
