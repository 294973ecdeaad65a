package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/loomkit/loom/graph"
)

// This file serves the LangGraph API's assistants: Loom's agents, their graphs and schemas (see langgraph.go).

type lgAssistant struct {
	AssistantID string         `json:"assistant_id"`
	GraphID     string         `json:"graph_id"`
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Config      map[string]any `json:"config"`
	Context     map[string]any `json:"context"`
	Metadata    map[string]any `json:"metadata"`
	Version     int            `json:"version"`
	CreatedAt   time.Time      `json:"created_at"`
	UpdatedAt   time.Time      `json:"updated_at"`
}

// started is when assistants were "created": they are built in.
var started = time.Now().UTC()

func assistantJSON(a *builtAgent) lgAssistant {
	return lgAssistant{AssistantID: a.Name, GraphID: a.Name, Name: a.Name, Description: a.Description,
		Config: map[string]any{}, Context: map[string]any{}, Metadata: assistantMetadata(a.Agent),
		Version: 1, CreatedAt: started, UpdatedAt: started}
}

// assistantMetadata is what an assistant's metadata says of agent a: who
// created it, and its description in each language it has one in
// (description_en, description_zh), for clients that show it in theirs.
func assistantMetadata(a Agent) map[string]any {
	m := map[string]any{"created_by": "system"}
	if a.Description != "" {
		m["description_en"] = a.Description
	}
	if a.DescriptionZh != "" {
		m["description_zh"] = a.DescriptionZh
	}
	if p := panelMetadata(a); p != nil {
		m["panel"] = p
	}
	return m
}

type assistantQuery struct {
	GraphID  string                     `json:"graph_id"`
	Name     string                     `json:"name"`
	Metadata map[string]json.RawMessage `json:"metadata"`
	page
}

// findAssistants is the assistants owner may use that a search asks
// for: those it created, newest first, then the agents.
func (s *Server) findAssistants(r *http.Request, owner string) ([]lgAssistant, assistantQuery, error) {
	var q assistantQuery
	if err := decode(r, &q); err != nil {
		return nil, q, err
	}
	all, err := s.records.listAssistants(r.Context(), owner)
	if err != nil {
		return nil, q, err
	}
	for _, name := range s.order {
		all = append(all, assistantJSON(s.agents[name]))
	}
	out := []lgAssistant{}
	for _, a := range all {
		if (q.GraphID != "" && q.GraphID != a.GraphID) || (q.Name != "" && !strings.Contains(a.Name, q.Name)) {
			continue
		}
		if len(q.Metadata) > 0 && !matchesMetadata(a.Metadata, q.Metadata) {
			continue
		}
		out = append(out, a)
	}
	return out, q, nil
}

func matchesMetadata(have map[string]any, want map[string]json.RawMessage) bool {
	for k, v := range want {
		b, _ := json.Marshal(have[k])
		if !jsonEqual(b, v) {
			return false
		}
	}
	return true
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}

func (s *Server) searchAssistants(w http.ResponseWriter, r *http.Request, owner string) error {
	as, q, err := s.findAssistants(r, owner)
	if err != nil {
		return err
	}
	if err := q.check(); err != nil {
		return err
	}
	as = as[min(q.Offset, len(as)):]
	writeJSON(w, http.StatusOK, as[:min(q.Limit, len(as))])
	return nil
}

func (s *Server) countAssistants(w http.ResponseWriter, r *http.Request, owner string) error {
	as, _, err := s.findAssistants(r, owner)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, len(as))
	return nil
}

func (s *Server) getAssistant(w http.ResponseWriter, r *http.Request, owner string) error {
	_, as, err := s.assistant(r.Context(), owner, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, as)
	return nil
}

type lgGraph struct {
	Nodes   []lgNode   `json:"nodes"`
	Edges   []lgEdge   `json:"edges"`
	Mermaid string     `json:"mermaid"`
	Spec    graph.Spec `json:"spec"`
}

type lgNode struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Type string `json:"type"`
	Data string `json:"data"`
}

type lgEdge struct {
	Source      string `json:"source"`
	Target      string `json:"target"`
	Conditional bool   `json:"conditional"`
	Data        string `json:"data,omitempty"`
}

// graphJSON is a graph's structure in the LangGraph API's shape, with its
// Loom spec and Mermaid drawing alongside.
func graphJSON(r graph.Runner) lgGraph {
	sp := r.Spec()
	g := lgGraph{Nodes: []lgNode{}, Edges: []lgEdge{}, Mermaid: r.Mermaid(), Spec: sp}
	for _, n := range append(append([]string{graph.Start}, sp.Nodes...), graph.End) {
		g.Nodes = append(g.Nodes, lgNode{ID: n, Name: n, Type: "runnable", Data: n})
	}
	for _, e := range sp.Edges {
		le := lgEdge{Source: e.From, Target: e.To, Conditional: e.Conditional}
		switch {
		case e.Exit:
			le.Data = fmt.Sprintf("after %d×", e.Max)
		case e.Max > 0:
			le.Data = fmt.Sprintf("at most %d×", e.Max)
		}
		g.Edges = append(g.Edges, le)
	}
	return g
}

func (s *Server) assistantGraph(w http.ResponseWriter, r *http.Request, owner string) error {
	a, _, err := s.assistant(r.Context(), owner, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, graphJSON(a.runner))
	return nil
}

func (s *Server) assistantSchemas(w http.ResponseWriter, r *http.Request, owner string) error {
	a, _, err := s.assistant(r.Context(), owner, r.PathValue("id"))
	if err != nil {
		return err
	}
	in := a.InputSchema
	if in == nil {
		in = json.RawMessage(`{"type":"object"}`)
	}
	// The state is the output too: a run's values are its final state.
	// What an interrupt's answer must be comes with each interrupt.
	state := a.runner.StateSchema()
	// The configuration is set in config.configurable or in context
	// alike: both are described by the agent's ConfigSchema.
	var config any
	if a.ConfigSchema != nil {
		config = a.ConfigSchema
	}
	writeJSON(w, http.StatusOK, map[string]any{"graph_id": a.Name, "input_schema": in, "output_schema": state,
		"state_schema": state, "config_schema": config, "context_schema": config})
	return nil
}

// lgSubgraph is one subgraph as /assistants/{id}/subgraphs serves it: the
// schemas LangGraph gives for a subgraph (its state is its input and its
// output), with the drawing /assistants/{id}/graph gives for a graph.
type lgSubgraph struct {
	InputSchema   json.RawMessage `json:"input_schema"`
	OutputSchema  json.RawMessage `json:"output_schema"`
	StateSchema   json.RawMessage `json:"state_schema"`
	ConfigSchema  json.RawMessage `json:"config_schema"`
	ContextSchema json.RawMessage `json:"context_schema"`
	lgGraph
}

// nsSep joins the node names of a nested subgraph's namespace, as in
// LangGraph ("outer|inner").
const nsSep = "|"

// subgraphsOf adds to out the subgraphs of r under prefix, as LangGraph
// lists them: with ns empty, each node's subgraph, and with recurse those
// nested in them too; with ns set, only the subgraph at that namespace.
func subgraphsOf(r graph.Runner, prefix, ns string, recurse bool, out map[string]lgSubgraph) {
	for name, sub := range r.Subgraphs() {
		rest, under := strings.CutPrefix(ns, name+nsSep)
		switch {
		case ns == name:
			out[prefix+name] = subgraphJSON(sub)
		case ns == "":
			out[prefix+name] = subgraphJSON(sub)
			if recurse {
				subgraphsOf(sub, prefix+name+nsSep, "", true, out)
			}
		case under:
			subgraphsOf(sub, prefix+name+nsSep, rest, recurse, out)
		}
	}
}

func subgraphJSON(r graph.Runner) lgSubgraph {
	state := r.StateSchema()
	return lgSubgraph{InputSchema: state, OutputSchema: state, StateSchema: state, lgGraph: graphJSON(r)}
}

// assistantSubgraphs serves GET /assistants/{id}/subgraphs and
// /assistants/{id}/subgraphs/{namespace}: an object from each subgraph's
// namespace (the name of the node that runs it; "outer|inner" for one
// nested in another, listed when recurse is true) to its schemas and
// drawing. A namespace that names no subgraph gives an empty object, as
// in LangGraph.
func (s *Server) assistantSubgraphs(w http.ResponseWriter, r *http.Request, owner string) error {
	a, _, err := s.assistant(r.Context(), owner, r.PathValue("id"))
	if err != nil {
		return err
	}
	recurse, err := queryBool(r, "recurse")
	if err != nil {
		return err
	}
	out := map[string]lgSubgraph{}
	subgraphsOf(a.runner, "", r.PathValue("namespace"), recurse, out)
	writeJSON(w, http.StatusOK, out)
	return nil
}
