package server_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/loomkit/loom/apps/demo"
	"github.com/loomkit/loom/server"
)

// TestAssistantDescriptionsInMetadata: an assistant's metadata carries
// its description in each language the agent gives one in, under the
// names the web page reads (description_en, description_zh).
func TestAssistantDescriptionsInMetadata(t *testing.T) {
	var r server.Registry
	for _, a := range []server.Agent{
		{Name: "both", Description: "a checklist", DescriptionZh: "清单", Build: server.Compile(demo.Graph())},
		{Name: "english", Description: "only English", Build: server.Compile(demo.Graph())},
	} {
		if err := r.Register(a); err != nil {
			t.Fatal(err)
		}
	}
	ts := startServer(t, server.Options{Agents: &r})

	var one struct {
		Description string         `json:"description"`
		Metadata    map[string]any `json:"metadata"`
	}
	code, body := call(t, http.MethodGet, ts.URL+"/assistants/both", "", nil)
	if code != http.StatusOK {
		t.Fatalf("GET /assistants/both: %d %s", code, body)
	}
	if err := json.Unmarshal(body, &one); err != nil {
		t.Fatal(err)
	}
	if one.Metadata["description_en"] != "a checklist" || one.Metadata["description_zh"] != "清单" || one.Description != "a checklist" {
		t.Errorf("assistant both: description %q, metadata %v", one.Description, one.Metadata)
	}

	var found []struct {
		AssistantID string         `json:"assistant_id"`
		Metadata    map[string]any `json:"metadata"`
	}
	code, body = call(t, http.MethodPost, ts.URL+"/assistants/search", "", map[string]any{"metadata": map[string]string{"description_zh": "清单"}})
	if code != http.StatusOK {
		t.Fatalf("search: %d %s", code, body)
	}
	if err := json.Unmarshal(body, &found); err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0].AssistantID != "both" {
		t.Errorf("search by description_zh found %s, want only both", body)
	}

	code, body = call(t, http.MethodGet, ts.URL+"/assistants/english", "", nil)
	if code != http.StatusOK {
		t.Fatalf("GET /assistants/english: %d %s", code, body)
	}
	one.Metadata = nil
	if err := json.Unmarshal(body, &one); err != nil {
		t.Fatal(err)
	}
	if _, ok := one.Metadata["description_zh"]; ok || one.Metadata["description_en"] != "only English" || one.Metadata["created_by"] != "system" {
		t.Errorf("assistant english: metadata %v, want created_by and description_en only", one.Metadata)
	}
}
