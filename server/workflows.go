package server

import (
	"cmp"
	"strings"

	"github.com/aguic/aguic/graph"
	"github.com/aguic/aguic/vm"
)

// WorkflowInfo describes one served workflow.
type WorkflowInfo struct {
	ID           string        `json:"id"`
	Title        string        `json:"title,omitempty"`
	Description  string        `json:"description,omitempty"`
	Conversation bool          `json:"conversation" doc:"Whether the thread keeps the conversation (send only the new turn) or the workflow is stateless (send the whole history)."`
	URL          string        `json:"url" doc:"The path to POST AG-UI runs of this workflow to."`
	Graph        string        `json:"graph" doc:"The workflow's graph as a Mermaid flowchart."`
	Capabilities *Capabilities `json:"capabilities,omitempty" doc:"What the workflow uses of AG-UI (GET of one workflow only)."`
	Source       *SourceFile   `json:"source,omitempty" doc:"The source file the workflow is written in, whole, and the lines of its block (GET of one workflow only)."`
	Layout       *graph.Layout `json:"layout,omitempty" doc:"The workflow's graph laid out for drawing: every vertex's box, every edge's polyline and label place, every group's box, in px (GET of one workflow only)."`
}

// Capabilities are the AG-UI agent capabilities of a workflow, derived
// from the nodes it and the workflows it calls use. Only the categories
// that apply are present.
type Capabilities struct {
	Identity       *IdentityCaps   `json:"identity,omitempty"`
	Transport      *TransportCaps  `json:"transport,omitempty"`
	Tools          *ToolsCaps      `json:"tools,omitempty"`
	Output         *OutputCaps     `json:"output,omitempty"`
	State          *StateCaps      `json:"state,omitempty"`
	Reasoning      *ReasoningCaps  `json:"reasoning,omitempty"`
	Multimodal     *MultimodalCaps `json:"multimodal,omitempty"`
	Execution      *ExecutionCaps  `json:"execution,omitempty"`
	HumanInTheLoop *HITLCaps       `json:"humanInTheLoop,omitempty"`
	MultiAgent     *MultiCaps      `json:"multiAgent,omitempty"`
}

// IdentityCaps names the agent.
type IdentityCaps struct {
	Name        string `json:"name,omitempty"`
	Type        string `json:"type,omitempty"`
	Description string `json:"description,omitempty"`
	Version     string `json:"version,omitempty"`
}

// TransportCaps says how events travel: as server-sent events, neither
// over WebSocket nor in the binary protocol; a stream cut short resumes by
// replay from the id of the last event the client saw.
type TransportCaps struct {
	Streaming  bool `json:"streaming"`
	WebSocket  bool `json:"websocket"`
	HTTPBinary bool `json:"httpBinary"`
	Resumable  bool `json:"resumable"`
}

// OutputCaps says what the workflow produces: text messages, and the
// run's result, JSON; StructuredOutput when a model is asked for JSON that
// matches a schema.
type OutputCaps struct {
	StructuredOutput   bool     `json:"structuredOutput"`
	SupportedMimeTypes []string `json:"supportedMimeTypes"`
}

// MultimodalCaps says what the workflow accepts besides text, and
// produces.
type MultimodalCaps struct {
	Input  *MultimodalInputCaps  `json:"input"`
	Output *MultimodalOutputCaps `json:"output"`
}

// MultimodalInputCaps: images in user messages reach a model; audio,
// video, PDF and other files are refused.
type MultimodalInputCaps struct {
	Image bool `json:"image"`
	Audio bool `json:"audio"`
	Video bool `json:"video"`
	PDF   bool `json:"pdf"`
	File  bool `json:"file"`
}

// MultimodalOutputCaps: a workflow produces neither images nor audio.
type MultimodalOutputCaps struct {
	Image bool `json:"image"`
	Audio bool `json:"audio"`
}

// ExecutionCaps are a run's limits: the most nodes it visits, and its
// deadline in milliseconds (absent when there is none). A workflow runs
// no code of its own.
type ExecutionCaps struct {
	CodeExecution    bool  `json:"codeExecution"`
	MaxIterations    int   `json:"maxIterations,omitempty"`
	MaxExecutionTime int64 `json:"maxExecutionTime,omitempty"`
}

// ToolsCaps says whether the workflow calls tools, and whether the
// client's own tools take part.
type ToolsCaps struct {
	Supported      bool `json:"supported"`
	ClientProvided bool `json:"clientProvided,omitempty"`
}

// StateCaps says how the workflow shares state with the client.
type StateCaps struct {
	Snapshots       bool `json:"snapshots,omitempty"`
	Deltas          bool `json:"deltas,omitempty"`
	PersistentState bool `json:"persistentState,omitempty"`
}

// ReasoningCaps says whether the workflow streams model reasoning.
type ReasoningCaps struct {
	Supported bool `json:"supported"`
	Streaming bool `json:"streaming,omitempty"`
}

// HITLCaps says how the workflow waits for people.
type HITLCaps struct {
	Supported  bool `json:"supported"`
	Approvals  bool `json:"approvals,omitempty"`
	Interrupts bool `json:"interrupts,omitempty"`
}

// MultiCaps says whether the workflow calls other workflows.
type MultiCaps struct {
	Supported  bool `json:"supported"`
	Delegation bool `json:"delegation,omitempty"`
}

func (s *Server) info(w *vm.Workflow, detail bool) WorkflowInfo {
	var g strings.Builder
	graph.WriteMermaid(&g, w)
	out := WorkflowInfo{
		ID:           w.ID,
		Title:        w.Title,
		Description:  w.Description,
		Conversation: w.Conversation,
		URL:          s.base + "/workflows/" + w.ID,
		Graph:        g.String(),
	}
	if detail {
		out.Capabilities = s.capabilities(w)
		out.Source = s.source(w)
		out.Layout = graph.LayOut(w)
	}
	return out
}

// capabilities derives what w uses of AG-UI from what its nodes give
// (vm.KindSpec.Gives) and what the nodes of the workflows it calls give:
// tools, human in the loop, state, reasoning, delegation, structured
// output, images. The transport, the output's types, what it refuses and
// the run's limits are the server's.
func (s *Server) capabilities(w *vm.Workflow) *Capabilities {
	p := s.cfg.Machine.Program
	c := &Capabilities{
		Identity:  &IdentityCaps{Name: w.ID, Type: "aguic workflow", Description: w.Description},
		Transport: &TransportCaps{Streaming: true, Resumable: true},
		Output:    &OutputCaps{SupportedMimeTypes: []string{"text/plain", "application/json"}},
		Multimodal: &MultimodalCaps{
			Input:  &MultimodalInputCaps{},
			Output: &MultimodalOutputCaps{},
		},
		Execution: &ExecutionCaps{MaxIterations: cmp.Or(s.cfg.Machine.MaxVisits, vm.DefaultMaxVisits)},
	}
	if s.cfg.Deadline > 0 {
		c.Execution.MaxExecutionTime = s.cfg.Deadline.Milliseconds()
	}
	if w.Title != "" {
		c.Identity.Name = w.Title
	}
	seen := map[string]bool{}
	var visit func(w *vm.Workflow)
	visit = func(w *vm.Workflow) {
		if w == nil || seen[w.ID] {
			return
		}
		seen[w.ID] = true
		for _, n := range w.Nodes {
			if n.Spec == nil || n.Spec.Gives == nil {
				continue
			}
			g := n.Spec.Gives(n)
			if g.Reasoning && c.Reasoning == nil {
				c.Reasoning = &ReasoningCaps{Supported: true, Streaming: true}
			}
			if g.Tools || g.ClientTools {
				tools(c)
			}
			if g.ClientTools {
				tools(c).ClientProvided = true
			}
			if g.Approvals {
				hitl(c).Approvals = true
			}
			if g.Interrupts {
				hitl(c).Interrupts = true
			}
			if g.HumanInTheLoop {
				hitl(c)
			}
			if g.StateSnapshots || g.StateDeltas {
				if c.State == nil {
					c.State = &StateCaps{}
				}
				c.State.Snapshots = c.State.Snapshots || g.StateSnapshots
				c.State.Deltas = c.State.Deltas || g.StateDeltas
			}
			c.Output.StructuredOutput = c.Output.StructuredOutput || g.Structured
			c.Multimodal.Input.Image = c.Multimodal.Input.Image || g.Images
			if g.Calls != "" {
				if c.MultiAgent == nil {
					c.MultiAgent = &MultiCaps{Supported: true, Delegation: true}
				}
				visit(p.Workflow(g.Calls))
			}
		}
	}
	visit(w)
	if c.State != nil && w.Conversation {
		c.State.PersistentState = true
	}
	return c
}

func tools(c *Capabilities) *ToolsCaps {
	if c.Tools == nil {
		c.Tools = &ToolsCaps{Supported: true}
	}
	return c.Tools
}

func hitl(c *Capabilities) *HITLCaps {
	if c.HumanInTheLoop == nil {
		c.HumanInTheLoop = &HITLCaps{Supported: true}
	}
	return c.HumanInTheLoop
}
