// Package patch builds the JSON Patches (RFC 6902) the mutating webhooks
// answer with. They patch the object as the API server sent it, member by
// member, so that fields this build's types do not know survive.
package patch

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"
)

// Op is one JSON Patch operation.
type Op struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// Add is the operation that adds value at path, replacing what is there.
func Add(path string, value any) Op { return Op{Op: "add", Path: path, Value: value} }

// Replace is the operation that replaces the value at path, which must
// exist.
func Replace(path string, value any) Op { return Op{Op: "replace", Path: path, Value: value} }

// Members returns the members of the JSON object raw, nil when raw is
// absent or null.
func Members(raw json.RawMessage) (map[string]json.RawMessage, error) {
	if IsNull(raw) {
		return nil, nil
	}
	var m map[string]json.RawMessage
	err := json.Unmarshal(raw, &m)
	return m, err
}

// IsNull reports whether raw, a JSON value, is absent or null.
func IsNull(raw json.RawMessage) bool {
	v := bytes.TrimSpace(raw)
	return len(v) == 0 || string(v) == "null"
}

// EscapePointer escapes s for a JSON Pointer (RFC 6901).
func EscapePointer(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

// AddAnnotations returns the operations that set annotations on obj, the
// members of an object, and leave its other annotations alone; none when
// annotations is empty.
func AddAnnotations(obj map[string]json.RawMessage, annotations map[string]string) []Op {
	if len(annotations) == 0 {
		return nil
	}
	// Members that are null are absent for the decoder, so they are set
	// whole like absent ones (add replaces an existing member).
	meta, _ := Members(obj["metadata"])
	switch {
	case meta == nil:
		return []Op{Add("/metadata", map[string]any{"annotations": annotations})}
	case IsNull(meta["annotations"]):
		return []Op{Add("/metadata/annotations", annotations)}
	}
	var ops []Op
	for _, k := range slices.Sorted(maps.Keys(annotations)) {
		ops = append(ops, Add("/metadata/annotations/"+EscapePointer(k), annotations[k]))
	}
	return ops
}
