package bundle

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Sanitize returns a copy of obj fit for a failure bundle, which CI uploads
// for whoever may see the run:
//
//   - A Secret (core v1) keeps the keys of its data and stringData, each
//     value replaced by its length and the start of its SHA-256
//     (Redacted): enough to tell an empty value, a wrong key or a changed
//     value, not enough to use it.
//   - kubectl's last-applied-configuration annotation is left out of every
//     object, its length said in its place: on a Secret it repeats the data;
//     on any other object it repeats what was applied, which the live
//     object shows as it is now, and may hold what was since removed from
//     the object (a password once put in a ConfigMap, say).
//     Which objects a spec's namespace holds is the suite's business, so
//     no kind is trusted to keep it.
//   - managedFields are left out: they say who set which field, which a
//     bundle's reader seldom needs, at the length of the object again.
//
// obj itself is not changed.
func Sanitize(obj *unstructured.Unstructured) *unstructured.Unstructured {
	out := obj.DeepCopy()
	unstructured.RemoveNestedField(out.Object, "metadata", "managedFields")
	if ann := out.GetAnnotations(); ann != nil {
		if v, ok := ann[corev1.LastAppliedConfigAnnotation]; ok {
			ann[corev1.LastAppliedConfigAnnotation] = fmt.Sprintf("<left out of the bundle: %d bytes>", len(v))
			out.SetAnnotations(ann)
		}
	}
	if gvk := out.GroupVersionKind(); gvk.Group == "" && gvk.Kind == "Secret" {
		redactValues(out.Object, "data", true)
		redactValues(out.Object, "stringData", false)
	}
	return out
}

// redactValues replaces each value of the map at field of a Secret by
// Redacted of it: data's decoded from base64 (when it does not decode,
// its text as written), stringData's as written. A field that is not a
// map of strings is replaced whole.
func redactValues(obj map[string]any, field string, base64Encoded bool) {
	raw, ok := obj[field]
	if !ok || raw == nil {
		return
	}
	values, ok := raw.(map[string]any)
	if !ok {
		obj[field] = fmt.Sprintf("<left out of the bundle: a %T, not a map>", raw)
		return
	}
	for k, v := range values {
		s, ok := v.(string)
		if !ok {
			values[k] = fmt.Sprintf("<left out of the bundle: a %T, not a string>", v)
			continue
		}
		value := []byte(s)
		if base64Encoded {
			if decoded, err := base64.StdEncoding.DecodeString(s); err == nil {
				value = decoded
			}
		}
		values[k] = Redacted(value)
	}
}

// RedactedHashLen is how many hexadecimal digits of a value's SHA-256
// Redacted keeps: 16, the first 64 bits, which tell two values apart
// but are no key to either. A value that can be guessed (a short word, a
// number) can still be found from them by trying every guess, as from
// any hash; a bundle's reader compares it with what they expected:
// printf %s "$value" | sha256sum | cut -c1-16.
const RedactedHashLen = 16

// Redacted is what a bundle shows in place of a Secret's value: its
// length and the first RedactedHashLen hexadecimal digits of its SHA-256,
// as "<redacted: 12 bytes, sha256:9f86d081884c7d65>".
func Redacted(value []byte) string {
	sum := sha256.Sum256(value)
	return fmt.Sprintf("<redacted: %d bytes, sha256:%s>", len(value), hex.EncodeToString(sum[:])[:RedactedHashLen])
}
