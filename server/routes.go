package server

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
)

// runBody is the input of the run routes.
type runBody struct {
	Body *RunAgentInput `required:"true"`
}

type runByID struct {
	ID   string         `path:"id" doc:"The workflow's id."`
	Body *RunAgentInput `required:"true"`
}

type workflowByID struct {
	ID string `path:"id" doc:"The workflow's id."`
}

type workflowList struct {
	Body []WorkflowInfo
}

type workflowOne struct {
	Body WorkflowInfo
}

type health struct {
	Body struct {
		Status string `json:"status" example:"ok"`
	}
}

// sseResponses documents the response of the run routes.
func sseResponses() map[string]*huma.Response {
	return map[string]*huma.Response{
		"200": {
			Description: "AG-UI events as server-sent events: RUN_STARTED first, then the run's events, then exactly one RUN_FINISHED or RUN_ERROR. Each frame is `id: <seq>` (for stored events) and `data: <event JSON>`; `: ping` comments keep the connection alive.",
			Content: map[string]*huma.MediaType{
				"text/event-stream": {Schema: &huma.Schema{Type: huma.TypeString}},
			},
		},
	}
}

func (s *Server) register() {
	b := s.base
	runOp := func(id, path, summary, desc string) huma.Operation {
		return huma.Operation{
			OperationID:     id,
			Method:          http.MethodPost,
			Path:            path,
			Summary:         summary,
			Description:     desc,
			Tags:            []string{"runs"},
			MaxBodyBytes:    s.cfg.BodyLimit,
			BodyReadTimeout: defaultReadLimit,
			Responses:       sseResponses(),
			Errors:          []int{http.StatusBadRequest, http.StatusNotFound, http.StatusConflict, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType, http.StatusServiceUnavailable},
		}
	}
	huma.Register(s.api, runOp("run", b, "Run the workflow forwardedProps names",
		"Runs the workflow that forwardedProps.aguic.workflowId or forwardedProps.aguic.workflowName names (either key is also accepted directly under forwardedProps); exactly one must be given, and a name must be the title of exactly one workflow."),
		func(ctx context.Context, in *runBody) (*huma.StreamResponse, error) {
			sel, err := selectorOf(in.Body.ForwardedProps)
			if err != nil {
				return nil, err
			}
			wf, err := s.workflow(sel)
			if err != nil {
				return nil, err
			}
			return s.start(ctx, runRequest{wf: wf, in: in.Body})
		})
	huma.Register(s.api, runOp("runWorkflow", b+"/workflows/{id}", "Run a workflow",
		"Runs the workflow with this id: the URL an AG-UI HttpAgent points at. A stateless workflow gets the whole history with every request; a conversation workflow only the new turn, and continues the thread where it stopped."),
		func(ctx context.Context, in *runByID) (*huma.StreamResponse, error) {
			wf, err := s.workflow(selector{id: in.ID})
			if err != nil {
				return nil, err
			}
			return s.start(ctx, runRequest{wf: wf, in: in.Body})
		})
	huma.Register(s.api, huma.Operation{
		OperationID: "listWorkflows",
		Method:      http.MethodGet,
		Path:        b + "/workflows",
		Summary:     "List the workflows",
		Description: "Every workflow served: its id, title, description, whether it is a conversation, and its graph as a Mermaid flowchart.",
		Tags:        []string{"workflows"},
	}, func(ctx context.Context, _ *struct{}) (*workflowList, error) {
		out := &workflowList{Body: []WorkflowInfo{}}
		for _, w := range s.cfg.Machine.Program.Workflows {
			out.Body = append(out.Body, s.info(w, false))
		}
		return out, nil
	})
	huma.Register(s.api, huma.Operation{
		OperationID: "getWorkflow",
		Method:      http.MethodGet,
		Path:        b + "/workflows/{id}",
		Summary:     "Describe a workflow",
		Description: "One workflow as the list shows it, with the AG-UI capabilities derived from the nodes it (and the workflows it calls) uses.",
		Tags:        []string{"workflows"},
		Errors:      []int{http.StatusNotFound},
	}, func(ctx context.Context, in *workflowByID) (*workflowOne, error) {
		wf, err := s.workflow(selector{id: in.ID})
		if err != nil {
			return nil, err
		}
		return &workflowOne{Body: s.info(wf, true)}, nil
	})
	s.registerHistory()
	s.registerThreads()
	s.registerBrowse()
	s.registerJoin()
	huma.Register(s.api, huma.Operation{
		OperationID: "health",
		Method:      http.MethodGet,
		Path:        "/healthz",
		Summary:     "Health check",
		Tags:        []string{"service"},
	}, func(ctx context.Context, _ *struct{}) (*health, error) {
		out := &health{}
		out.Body.Status = "ok"
		return out, nil
	})
}
