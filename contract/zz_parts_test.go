package contract

import (
	"bytes"
	"encoding/json"
	"testing"

	jsv "github.com/santhosh-tekuri/jsonschema/v6"
)

func partsData(b *testing.B) ([]byte, *Schema) {
	s, _ := SchemaFor[decision]()
	raw, err := Extract(answer2KB)
	if err != nil {
		b.Fatal(err)
	}
	return raw, s
}

func BenchmarkPartNormalise(b *testing.B) {
	raw, _ := partsData(b)
	var buf []byte
	for b.Loop() {
		buf = normalise(buf[:0], string(raw), nil)
	}
}
func BenchmarkPartAnyNumber(b *testing.B) {
	raw, _ := partsData(b)
	b.ReportAllocs()
	for b.Loop() {
		jsv.UnmarshalJSON(bytes.NewReader(raw))
	}
}
func BenchmarkPartAnyFloat(b *testing.B) {
	raw, _ := partsData(b)
	b.ReportAllocs()
	for b.Loop() {
		var v any
		json.Unmarshal(raw, &v)
	}
}
func BenchmarkPartValidate(b *testing.B) {
	raw, s := partsData(b)
	v, _ := jsv.UnmarshalJSON(bytes.NewReader(raw))
	b.ReportAllocs()
	for b.Loop() {
		if err := s.v.Validate(v); err != nil {
			b.Fatal(err)
		}
	}
}
func BenchmarkPartWalk(b *testing.B) {
	raw, s := partsData(b)
	v, _ := jsv.UnmarshalJSON(bytes.NewReader(raw))
	b.ReportAllocs()
	for b.Loop() {
		var w walker
		w.walk(v, s.v)
	}
}
func BenchmarkPartUnmarshalT(b *testing.B) {
	raw, _ := partsData(b)
	b.ReportAllocs()
	for b.Loop() {
		var d decision
		json.Unmarshal(raw, &d)
	}
}
