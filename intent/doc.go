// Package intent is a local-first intent engine: it tells which of an
// agent's intents a user's words ask for, in Chinese or English, without a
// model, and says whether to execute, clarify, route to the cloud or
// reject.
//
// New builds an Engine from a Config (YAML or JSON) at start-up, with
// nothing downloaded:
//
//   - keyword: the intents' keywords in one Aho–Corasick automaton (written
//     here; Latin keywords match whole words only); a hit scores 1;
//   - classifier: a one-vs-rest linear SVM (squared hinge, dual coordinate
//     descent as in liblinear) trained on the intents' examples over hashed
//     word uni- and bigrams and character 2–4-grams, sublinear tf, L2
//     norm; a softmax of its decision values gives the scores;
//   - retrieval: BM25 over the examples and keywords with words and
//     character 2–3-grams as terms, so Chinese needs no segmenter; an
//     intent scores its best example, relative to the query's own score;
//   - optionally a remote classifier (WithRemote, RemoteClassifier: a
//     service over HTTP) on every request, and a model stage (WithModel,
//     NewModelMatcher: an LLM through package llm) consulted only when the
//     local stages do not execute. Both are a Matcher.
//
// Fusion weighs each stage's scores (keyword 1.15, classifier 1.0,
// retrieval 0.75, model 1.1), adds a bonus to the intent an accepted stage
// selects, and decides (FusionConfig): execute on a high score, on two
// agreeing accepted stages, on a sure classifier or a sure model; reject
// when the out-of-scope class (Config.OutOfScope, trained from its examples
// like any intent) ranks first or the score is low; clarify when the top
// two are close; route_to_cloud otherwise. Every Result carries the debug
// record of each stage: candidates, scores, acceptance, errors and time.
// Calibrate tunes the thresholds on examples held out from the training
// data.
//
// Before routing, Understand applies rules, all
// from Config.Rules: the dialog act, stop phrases (only with an active
// task), social routing, and rewrites of short follow-ups from the
// session's intent and slots ("低一点" → "把空调调到21度"). RouteClauses
// splits a multi-intent utterance at connectives and punctuation and
// routes each clause (§17).
//
// ReadConsent reads a reply to a pending yes-or-no question as Accepted,
// Rejected or Unclear, with negation, hedges and questions handled (its
// dialog acts are in consent.yml); every agent that asks a person reads
// the answer with it, and asks again when it is Unclear.
//
// Evaluate measures an engine on labelled examples: in-scope accuracy,
// macro-F1, out-of-scope recall and routing time; `loom eval intent` runs
// it on the data sets package dataset reads.
package intent
