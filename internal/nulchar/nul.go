// Package nulchar finds the character NUL (U+0000) in decoded JSON: valid in
// JSON, but no id may hold it and PostgreSQL's text and jsonb cannot, so
// Loom's server and agents refuse it where it would reach them.
package nulchar

import (
	"slices"
	"strings"
)

// In reports whether v, a value decoded from JSON into any, has a string
// or an object key that holds NUL.
func In(v any) bool {
	switch v := v.(type) {
	case string:
		return strings.ContainsRune(v, 0)
	case []any:
		return slices.ContainsFunc(v, In)
	case map[string]any:
		for k, x := range v {
			if strings.ContainsRune(k, 0) || In(x) {
				return true
			}
		}
	}
	return false
}
