package server

import (
	"net/http"
)

// This file serves the LangGraph Platform API, as the official client
// @langchain/langgraph-sdk calls it: assistants are Loom's agents (the
// assistant id is the agent's name), threads and runs are Loom's.

func (s *Server) langGraphRoutes(m *http.ServeMux) {
	routes := map[string]handler{
		"POST /assistants/search":                    s.searchAssistants,
		"POST /assistants/count":                     s.countAssistants,
		"GET /assistants/{id}":                       s.getAssistant,
		"GET /assistants/{id}/graph":                 s.assistantGraph,
		"GET /assistants/{id}/schemas":               s.assistantSchemas,
		"GET /assistants/{id}/subgraphs":             s.assistantSubgraphs,
		"GET /assistants/{id}/subgraphs/{namespace}": s.assistantSubgraphs,
		"POST /threads":                              s.createThread,
		"POST /threads/search":                       s.searchThreads,
		"POST /threads/count":                        s.countThreads,
		"GET /threads/{tid}":                         s.getThread,
		"PATCH /threads/{tid}":                       s.patchThread,
		"DELETE /threads/{tid}":                      s.deleteThread,
		"POST /threads/{tid}/copy":                   s.copyThread,
		"GET /threads/{tid}/state":                   s.getState,
		"GET /threads/{tid}/state/{cid}":             s.getState,
		"POST /threads/{tid}/state/checkpoint":       s.getStateAt,
		"POST /threads/{tid}/state":                  s.updateState,
		"GET /threads/{tid}/history":                 s.history,
		"POST /threads/{tid}/history":                s.history,
		"GET /threads/{tid}/stream":                  s.joinThreadStream,
		"POST /threads/{tid}/runs":                   s.createRun,
		"POST /threads/{tid}/runs/wait":              s.createRun,
		"POST /threads/{tid}/runs/stream":            s.createRun,
		"POST /runs":                                 s.createRun,
		"POST /runs/wait":                            s.createRun,
		"POST /runs/stream":                          s.createRun,
		"GET /threads/{tid}/runs":                    s.listRuns,
		"GET /threads/{tid}/runs/{rid}":              s.getRun,
		"DELETE /threads/{tid}/runs/{rid}":           s.deleteRun,
		"POST /threads/{tid}/runs/{rid}/cancel":      s.cancelRunAPI,
		"GET /threads/{tid}/runs/{rid}/join":         s.joinRun,
		"GET /threads/{tid}/runs/{rid}/stream":       s.joinRunStream,
	}
	s.assistantRoutes(routes)
	s.batchRoutes(routes)
	for p, h := range routes {
		m.Handle(p, s.api(h))
	}
}
