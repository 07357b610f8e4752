// Package jsonvalue works with values decoded from JSON into map[string]any
// trees, as unstructured objects hold them. It names their types for error
// messages, copies them without panicking on malformed input and finds
// the conditions of a decoded status.
package jsonvalue

import (
	"encoding/json"
	"fmt"
	"math"
)

// TypeName names the JSON type of v for error messages, e.g. "an object".
func TypeName(v any) string {
	switch m := v.(type) {
	case nil:
		return "null"
	case map[string]any:
		if m == nil {
			return "null"
		}
		return "an object"
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64, json.Number:
		return "a number"
	}
	return fmt.Sprintf("a %T", v)
}

// Copy deep-copies maps and lists; anything else is returned as is (JSON
// scalars are immutable), so that malformed input cannot panic.
func Copy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = Copy(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = Copy(e)
		}
		return out
	}
	return v
}

// Int64 reads an integer as JSON decoders leave it: an int64 from
// apimachinery, a float64 from encoding/json, or a Go int; false for
// anything else, a fraction included.
func Int64(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	case int32:
		return int64(n), true
	case float64:
		if n == math.Trunc(n) && n >= math.MinInt64 && n < math.MaxInt64 {
			return int64(n), true
		}
	}
	return 0, false
}

// Condition is the condition of type t among a decoded status's
// conditions (status.conditions, a list of objects), or nil.
func Condition(status map[string]any, t string) map[string]any {
	conds, _ := status["conditions"].([]any)
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == t {
			return m
		}
	}
	return nil
}
