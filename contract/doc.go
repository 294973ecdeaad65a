// Package contract turns a model's answer into a typed Go value.
//
// A model asked for a JSON decision rarely answers with JSON alone: it wraps
// the object in prose, in a ```json code fence or in a tagged block such as
// <DECISION>{…}</DECISION>, leaves a trailing comma, copies a // comment from
// the format it was shown, or breaks a string over two lines. Decode finds
// the object, repairs those slips where the repair cannot change the meaning,
// validates it against the JSON schema derived from T and decodes it. Ask
// wraps Decode in a correction loop: when an answer
// cannot be used, the problems and the expected format go back to the model
// and it is asked again, up to a bound. Splitter does the same on a stream:
// it parses the decision block as soon as it is complete and passes the free
// text around it through to the user.
//
// # Schema rules
//
// The schema of T comes from package schema (see its rules): the one shown
// to the model is the one the answer is validated against; encoding/json
// then decodes it into T.
//
// # Tolerated slips
//
// Leading and trailing prose, code fences, tagged blocks, trailing commas
// before } or ], // and /* */ comments, and raw control characters (a real
// newline) inside strings. The slips are repaired by a lexical pass that
// only tells strings from the rest, before encoding/json sees the text.
// Nothing else is guessed: single quotes, bare keys and Python literals are
// syntax errors, reported by encoding/json with their offset in the answer.
//
// The scanner that finds the object is a single pass over the text with a
// brace and string state machine (at most four passes when the first start
// turns out to be a stray brace in prose), so extraction is linear in the
// length of the answer whatever it contains.
package contract
