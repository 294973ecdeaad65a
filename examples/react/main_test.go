package main

import (
	"context"
	"strings"
	"testing"
)

func TestExampleRunsOffline(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	var out strings.Builder
	if err := run(context.Background(), &out, "Is it dry in Oslo tomorrow? If so, book room A1 for day 3."); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`tool_result {"id":"call_1","result":"dry, 14°C in Oslo","tool":"weather"}`,
		`"summary":"book room A1 for day 3"`,
		`tool_result {"id":"call_2","result":"room A1 booked for day 3","tool":"book_room"}`,
		"answer: Oslo will be dry, and room A1 is booked for day 3.",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
