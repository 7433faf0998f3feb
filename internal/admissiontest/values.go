package admissiontest

// What the webhooks' fuzz targets ask of the bodies they are given: whether
// the API server could have sent them at all.

import (
	"bytes"
	"encoding/json"
	"regexp"

	"github.com/kubeharness/kubeharness/webhook/safequantity"
)

// quantityForm matches what resource.ParseQuantity may read as a quantity.
var quantityForm = regexp.MustCompile(`^\s*[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE])?\s*$`)

// APIServerCould reports whether the API server could send these objects:
// every value in them that reads as a quantity passes safequantity.Check,
// as the canonical quantities the API server encodes do.
func APIServerCould(objects ...[]byte) bool {
	for _, raw := range objects {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		for {
			tok, err := dec.Token()
			if err != nil {
				break
			}
			var s string
			switch tok := tok.(type) {
			case string:
				s = tok
			case json.Number:
				s = tok.String()
			default:
				continue
			}
			if quantityForm.MatchString(s) && safequantity.Check(s) != nil {
				return false
			}
		}
	}
	return true
}

// HasDuplicateKeys reports whether an object in the JSON value raw has a
// key twice.
func HasDuplicateKeys(raw []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	var value func() bool
	value = func() bool {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				key, err := dec.Token()
				if err != nil {
					return false
				}
				k, _ := key.(string)
				if seen[k] {
					return true
				}
				seen[k] = true
				if value() {
					return true
				}
			}
		case json.Delim('['):
			for dec.More() {
				if value() {
					return true
				}
			}
		default:
			return false
		}
		_, _ = dec.Token() // the closing delimiter
		return false
	}
	return value()
}

// IsZero reports whether v, decoded JSON, is null, false, 0, "", {} or [].
func IsZero(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case bool:
		return !v
	case float64:
		return v == 0
	case string:
		return v == ""
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	}
	return false
}
