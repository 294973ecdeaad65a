package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/loomkit/loom/schema"
)

// InputSchemaFor returns the JSON schema of T, an agent's input type, for
// Agent.InputSchema: generated from the Go type as schema.For does,
// so a struct's schema lists its fields, required unless tagged omitempty,
// and forbids any other ("additionalProperties": false), which a run's
// input is then held to. It panics if T has no JSON schema, a programming
// error.
func InputSchemaFor[T any]() json.RawMessage {
	s, err := schema.For[T]()
	if err != nil {
		panic(fmt.Sprintf("server: input schema: %v", err))
	}
	return s.JSON()
}

// CheckInput checks a run's input as the server does before it starts a
// run (422 when it fails): a JSON object, without a field the agent's
// InputSchema forbids, that fits the schema. The error says what does not
// fit; `loom run` checks its --input with it.
func (a Agent) CheckInput(input json.RawMessage) error {
	var s *schema.Schema
	if a.InputSchema != nil {
		var err error
		if s, err = schema.Parse(a.InputSchema); err != nil {
			return fmt.Errorf("agent %s: input schema: %w", a.Name, err)
		}
	}
	return checkInput(a, s, input)
}

// checkInput is CheckInput with the agent's schema compiled (s, nil for
// none).
func checkInput(a Agent, s *schema.Schema, input json.RawMessage) error {
	if t := bytes.TrimSpace(input); len(t) == 0 || t[0] != '{' {
		return fmt.Errorf("input must be a JSON object")
	}
	if field, known := unknownField(a.InputSchema, input); field != "" {
		return fmt.Errorf("input field %q is not one of agent %s's: %s", field, a.Name, strings.Join(known, ", "))
	}
	if s != nil {
		if err := s.Validate(input); err != nil {
			return fmt.Errorf("input does not fit agent %s: %w", a.Name, err)
		}
	}
	return nil
}

// unknownField returns the first field of input, in sorted order, that the
// JSON schema forbids: one not among its properties when it says
// "additionalProperties": false (as the schemas of Go structs do), and the
// fields it allows. It returns "" when there is none, or when schema or
// input is not a JSON object.
func unknownField(schema, input json.RawMessage) (field string, known []string) {
	var sc struct {
		Properties           map[string]json.RawMessage `json:"properties"`
		AdditionalProperties *bool                      `json:"additionalProperties"`
	}
	var in map[string]json.RawMessage
	if json.Unmarshal(schema, &sc) != nil || sc.AdditionalProperties == nil || *sc.AdditionalProperties || json.Unmarshal(input, &in) != nil {
		return "", nil
	}
	for name := range sc.Properties {
		known = append(known, name)
	}
	slices.Sort(known)
	var unknown []string
	for name := range in {
		if _, ok := sc.Properties[name]; !ok {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) == 0 {
		return "", known
	}
	return slices.Min(unknown), known
}
