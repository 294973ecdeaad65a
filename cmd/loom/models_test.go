package main

import (
	"reflect"
	"testing"
)

// The models a run may choose are LOOM_MODEL and those LOOM_MODELS adds,
// once each, and none without a model.
func TestModelNames(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("LOOM_MODEL", "deepseek-chat")
	t.Setenv("LOOM_MODELS", " deepseek-reasoner, deepseek-chat,,qwen-max ")
	if got, want := modelNames(), []string{"deepseek-chat", "deepseek-reasoner", "qwen-max"}; !reflect.DeepEqual(got, want) {
		t.Errorf("modelNames() = %q, want %q", got, want)
	}
	t.Setenv("LOOM_MODELS", "")
	if got, want := modelNames(), []string{"deepseek-chat"}; !reflect.DeepEqual(got, want) {
		t.Errorf("without LOOM_MODELS: %q, want %q", got, want)
	}
	t.Setenv("LOOM_MODEL", "")
	t.Setenv("LOOM_MODELS", "qwen-max")
	if got := modelNames(); got != nil {
		t.Errorf("without LOOM_MODEL: %q, want none", got)
	}
}
