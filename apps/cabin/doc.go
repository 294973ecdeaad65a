// Package cabin is the in-car assistant and customer-service agent, built
// on Loom: local-first understanding, multi-step
// workflows with conditions and confirmations, and tools (package tool,
// one registry: App.Tools) that act on a simulated vehicle, a simulated
// order service or real backends over HTTP. Whether a step asks for a
// yes first is the tool policy's, and the question carries the tool's
// confirm request, as for every Loom agent.
//
// Everything it knows comes from seven YAML files (LoadConfig): the
// intent catalogue (domain.yml), actions and their tools (actions.yml),
// slots and forms (forms.yml), reply templates (responses.yml), turn
// rules (rules.yml), dialog acts (dialog_acts.yml) and workflow templates
// (workflows.yml). Complete zh-CN and English sets are embedded; a
// directory may replace any of them. A bad file stops New with file, line
// and reason.
//
// A turn runs on the session's Loom thread, through a graph (App.Graph)
// whose nodes are the turn's stages and whose routes choose from what the
// turn found out:
//
//	normalize → stop_check → read_answer → social_route → context_rewrite
//	  → understand → fuse_decide
//	                  the text, a stop phrase, the answer to what the session
//	                  waits for, small talk, follow-up rewrites, the matchers
//	                  and their fusion (intent.Engine), the decision
//	plan_template → plan_heuristic → plan_model
//	                  the planners, for several clauses or an unsure decision
//	execute, clarify, route_to_cloud, reject
//	                  the local decision
//	next_step → fill_slots | condition → confirm | call_tool → next_step
//	                  the workflow, a bounded loop; fill_slots and confirm
//	                  are graph interrupts the next turn, or fill-slots,
//	                  answers
//	respond           the reply
//
// A tool call, a model's plan and a question are checkpointed (the other
// steps are graph.Pure), so a session survives a restart. Every
// reply carries the routing debug and a per-stage latency breakdown.
//
// The assistant's own HTTP API is Routes; ServerAgent registers the same agent in
// Loom's server, its OpenAI-compatible endpoint and its web page. With no
// model the assistant runs entirely on its configuration; with one
// (Options.Model) it also plans what the local planners cannot and
// answers open small talk.
package cabin
