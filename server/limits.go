package server

import (
	"fmt"

	"github.com/danielgtaylor/huma/v2"
)

// MaxIDBytes is the longest id a request may carry, in bytes: a thread id
// (in a body or in a path), a run id, a parent run id, a message's id and
// tool call id, the id of a tool call in an assistant message, and an
// interrupt id of resume. Thread ids are part of the keys of the data
// directory, and every id is echoed in the events of the run; a longer
// one is answered 400, with the field and the limit, and nothing runs.
const MaxIDBytes = 256

// ids collects the errors of the ids of one request that are too long.
type ids struct {
	errs []error
}

// check adds an error when id is over MaxIDBytes: field names it, at
// location prefix.field ("path.threadId", "body.messages[2].id").
func (c *ids) check(prefix, field, id string) {
	if len(id) > MaxIDBytes {
		c.errs = append(c.errs, &huma.ErrorDetail{
			Message:  fmt.Sprintf("%s is %d bytes long; the limit is %d", field, len(id), MaxIDBytes),
			Location: prefix + "." + field,
		})
	}
}

// body checks the ids of a run request's body, at location prefix.
func (c *ids) body(prefix *huma.PathBuffer, threadID, runID, parentRunID string, msgs []Message, resume []ResumeEntry) {
	at := prefix.String()
	c.check(at, "threadId", threadID)
	c.check(at, "runId", runID)
	c.check(at, "parentRunId", parentRunID)
	for i, m := range msgs {
		if len(m.ID) > MaxIDBytes {
			c.check(at, fmt.Sprintf("messages[%d].id", i), m.ID)
		}
		if len(m.ToolCallID) > MaxIDBytes {
			c.check(at, fmt.Sprintf("messages[%d].toolCallId", i), m.ToolCallID)
		}
		for j, tc := range m.ToolCalls {
			if len(tc.ID) > MaxIDBytes {
				c.check(at, fmt.Sprintf("messages[%d].toolCalls[%d].id", i, j), tc.ID)
			}
		}
	}
	for i, r := range resume {
		if len(r.InterruptID) > MaxIDBytes {
			c.check(at, fmt.Sprintf("resume[%d].interruptId", i), r.InterruptID)
		}
	}
}

// Resolve checks the lengths of the ids of a run request's body.
func (in *RunAgentInput) Resolve(_ huma.Context, prefix *huma.PathBuffer) []error {
	var c ids
	c.body(prefix, in.ThreadID, in.RunID, in.ParentRunID, in.Messages, in.Resume)
	return c.errs
}

// Resolve checks the lengths of the ids of the body of a run on a thread.
func (in *ThreadRunInput) Resolve(_ huma.Context, prefix *huma.PathBuffer) []error {
	var c ids
	c.body(prefix, in.ThreadID, in.RunID, in.ParentRunID, in.Messages, in.Resume)
	return c.errs
}

// Resolve checks the length of the thread id of a history request.
func (in *HistoryRequest) Resolve(_ huma.Context, prefix *huma.PathBuffer) []error {
	var c ids
	c.check(prefix.String(), "threadId", in.ThreadID)
	return c.errs
}

// threadPath checks the thread id of a route's path.
func threadPath(threadID string) []error {
	var c ids
	c.check("path", "threadId", threadID)
	return c.errs
}

// Resolve checks the length of the thread id of the URL.
func (in *threadRunInput) Resolve(huma.Context) []error { return threadPath(in.ThreadID) }

// Resolve checks the length of the thread id of the URL.
func (in *threadQuery) Resolve(huma.Context) []error { return threadPath(in.ThreadID) }

// Resolve checks the length of the thread id of the URL.
func (in *replayInput) Resolve(huma.Context) []error { return threadPath(in.ThreadID) }

// Resolve checks the length of the thread id of the URL.
func (in *messagesInput) Resolve(huma.Context) []error { return threadPath(in.ThreadID) }
