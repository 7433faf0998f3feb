// Package safequantity guards resource.ParseQuantity against the strings
// users can write but it cannot afford: for some short ones, such as
// 1e-2147483647, it spends minutes building a power of ten to round with
// (kubernetes/kubernetes#141306), and quantities of far-apart scales cost
// as much to compare. The API server hands built-in objects over with
// their quantities re-encoded canonically, but custom resources and
// annotations as their authors wrote them, so a webhook reading those
// checks them here first.
package safequantity

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const (
	// MaxLength is the longest quantity accepted, far longer than any
	// real amount.
	MaxLength = 64
	// MaxExponentDigits is how many digits a decimal exponent (the 3 of
	// 1e3) may have.
	MaxExponentDigits = 3
)

// Check returns an error when s, a quantity as written, is longer than
// MaxLength or has a decimal exponent of more than MaxExponentDigits
// digits. It says nothing about whether s parses.
func Check(s string) error {
	s = strings.TrimSpace(s)
	if len(s) > MaxLength {
		return fmt.Errorf("a quantity must be at most %d characters long", MaxLength)
	}
	// The exponent is whatever follows the last e or E when it is a signed
	// integer; a trailing E alone is the exa suffix.
	if i := strings.LastIndexAny(s, "eE"); i >= 0 && i < len(s)-1 {
		digits := strings.TrimLeft(s[i+1:], "+-")
		if _, err := strconv.ParseUint(digits, 10, 64); err == nil && len(digits) > MaxExponentDigits {
			return fmt.Errorf("a quantity's exponent must have at most %d digits", MaxExponentDigits)
		}
	}
	return nil
}

// Parse is resource.ParseQuantity for strings that pass Check.
func Parse(s string) (resource.Quantity, error) {
	if err := Check(s); err != nil {
		return resource.Quantity{}, fmt.Errorf("%q: %w", truncate(s), err)
	}
	return resource.ParseQuantity(s)
}

// CheckJSON checks every quantity of the JSON document raw found at one of
// paths, each a list of object keys in which "*" matches any key or array
// index. Every occurrence counts, those under duplicate keys included,
// since a decoder may merge them. A document that is no valid JSON is left
// to its decoder to refuse.
func CheckJSON(raw []byte, paths ...[]string) field.ErrorList {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var errs field.ErrorList
	var value func(path []string) error
	value = func(path []string) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok := tok.(type) {
		case json.Delim:
			switch tok {
			case '{':
				for dec.More() {
					key, err := dec.Token()
					if err != nil {
						return err
					}
					k, _ := key.(string)
					if err := value(append(path, k)); err != nil {
						return err
					}
				}
			case '[':
				for i := 0; dec.More(); i++ {
					if err := value(append(path, strconv.Itoa(i))); err != nil {
						return err
					}
				}
			}
			_, err := dec.Token() // the closing delimiter
			return err
		case string:
			errs = append(errs, checkAt(path, tok, paths)...)
		case json.Number:
			errs = append(errs, checkAt(path, tok.String(), paths)...)
		}
		return nil
	}
	// Where the document stops being valid JSON, its decoder refuses it.
	_ = value(nil)
	return errs
}

func checkAt(path []string, s string, patterns [][]string) field.ErrorList {
	for _, p := range patterns {
		if !matches(path, p) {
			continue
		}
		if err := Check(s); err != nil {
			fp := field.NewPath(path[0])
			for _, k := range path[1:] {
				if i, err := strconv.Atoi(k); err == nil {
					fp = fp.Index(i)
				} else {
					fp = fp.Child(k)
				}
			}
			return field.ErrorList{field.Invalid(fp, truncate(s), err.Error())}
		}
		return nil
	}
	return nil
}

func matches(path, pattern []string) bool {
	if len(path) != len(pattern) {
		return false
	}
	for i, k := range pattern {
		if k != "*" && k != path[i] {
			return false
		}
	}
	return true
}

// truncate keeps a refused value short enough to echo, cut at a rune.
func truncate(s string) string {
	if len(s) <= MaxLength {
		return s
	}
	cut := MaxLength
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
