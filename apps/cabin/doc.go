// Package cabin is the in-car assistant and customer-service agent, built
// on Loom: local-first understanding, multi-step
// workflows with conditions and confirmations, and plugins that act on a
// simulated vehicle, a simulated order service or real backends over
// HTTP.
//
// Everything it knows comes from seven YAML files (LoadConfig): the
// intent catalogue (domain.yml), actions and their plugins (actions.yml),
// slots and forms (forms.yml), reply templates (responses.yml), turn
// rules (rules.yml), dialog acts (dialog_acts.yml) and workflow templates
// (workflows.yml). Complete zh-CN and English sets are embedded; a
// directory may replace any of them. A bad file stops New with file, line
// and reason.
//
// A turn runs on the session's Loom thread, through a graph (App.Graph):
//
//	understand  dialog act, stop, small talk, rewrite, routing
//	            (intent.Engine); or the answer to what the session waits for
//	plan        template → heuristic → optional model planner, or the
//	            routed intent; clarify, reject or fallback otherwise
//	execute     the workflow's steps in order: depends_on, conditions on
//	            an earlier result, slots, confirmation, the plugin call
//	wait        a graph interrupt: the next turn, or fill-slots, answers it
//
// Every step is checkpointed, so a session survives a restart. Every
// reply carries the routing debug and a per-stage latency breakdown.
//
// The seed's HTTP API is Routes; ServerAgent registers the same agent in
// Loom's server, its OpenAI-compatible endpoint and its web page. With no
// model the assistant runs entirely on its configuration; with one
// (Options.Model) it also plans what the local planners cannot and
// answers open small talk.
package cabin
