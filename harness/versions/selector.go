package versions

import (
	"fmt"
	"os"
	"strings"
)

// EnvVar is the environment variable that names the Kubernetes version of
// the control plane: make, the kubeharness CLI and the e2e suite's
// providers all read it (through FromEnv or FromCommandLine).
const EnvVar = "K8S_VERSION"

// Source is where a Selector came from, so that a message can say so.
type Source string

// Where a Selector came from.
const (
	// SourceEnv is $K8S_VERSION.
	SourceEnv Source = EnvVar
	// SourceFlag is a command's --version flag.
	SourceFlag Source = "--version"
	// SourceArg is a command's VERSION argument.
	SourceArg Source = "VERSION argument"
	// SourceDefault is the default in versions.yaml, used when nothing else
	// names a version.
	SourceDefault Source = LockfileName + " default"
)

// Selector is what a user asked for, parsed: a patch ("1.37.1"), the newest
// patch of a minor ("1.37"), or nothing, which means versions.yaml's
// default (the zero Selector). It remembers the text and its Source, so
// that a message names the request as the user gave it
// ("K8S_VERSION=v1.37"). Resolver.Resolve turns it into a Version.
type Selector struct {
	kind kind
	// v is the patch asked for; for a minor, its patch 0.
	v    Version
	from Source
	// text is what the user wrote, trimmed of spaces.
	text string
}

// SelectorError is a request that is no version, or a pre-release. Its
// message names the request with its source, says what is wrong and what to
// ask for instead; Lockfile.Explain adds the versions that can be built.
type SelectorError struct {
	sel        Selector
	prerelease bool
	release    string
	minor      string
}

func (e *SelectorError) Error() string {
	if e.prerelease {
		return fmt.Sprintf("%s is a pre-release, and kubeharness builds Kubernetes releases only: ask for %s, or %s for the newest %s patch the Go module proxy serves",
			e.sel, e.sel.ask(e.release), e.sel.ask(e.minor), e.minor)
	}
	return fmt.Sprintf("%s is not a Kubernetes version: write a patch such as 1.37.1 or a minor such as 1.37 (its newest patch the Go module proxy serves), with or without a leading v", e.sel)
}

// ParseSelector reads what a user asked for, from: a patch ("1.37.1",
// "v1.37.1"), a minor ("1.37", "1.37.x", "v1.37") or nothing (""). It asks
// nobody. A pre-release, or anything else, is a *SelectorError.
func ParseSelector(value string, from Source) (Selector, error) {
	s := scan(value)
	sel := Selector{kind: s.kind, v: s.v, from: from, text: s.text}
	switch {
	case s.text == "" || s.kind != defaultVersion:
		return sel, nil
	case s.prerelease:
		return Selector{}, &SelectorError{sel: sel, prerelease: true, release: s.release, minor: s.minor}
	}
	return Selector{}, &SelectorError{sel: sel}
}

// MustParseSelector is ParseSelector for requests known to be right; it
// panics otherwise.
func MustParseSelector(value string, from Source) Selector {
	sel, err := ParseSelector(value, from)
	if err != nil {
		panic(err)
	}
	return sel
}

// FromEnv is what $K8S_VERSION asks for.
func FromEnv() (Selector, error) { return ParseSelector(os.Getenv(EnvVar), SourceEnv) }

// FromCommandLine picks what a command is asked for, the most specific
// source first: the command line (its --version flag and its VERSION
// argument, which must agree), then $K8S_VERSION. When all are empty the
// Selector asks for nothing, which Resolve turns into versions.yaml's
// default. Flag and argument that disagree are an error that is no
// *SelectorError: a usage error.
func FromCommandLine(flag, arg string) (Selector, error) {
	flag, arg = strings.TrimSpace(flag), strings.TrimSpace(arg)
	switch {
	case flag != "" && arg != "" && normalize(flag) != normalize(arg):
		return Selector{}, fmt.Errorf("the VERSION argument %s and --version %s disagree: give one of them", arg, flag)
	case arg != "":
		return ParseSelector(arg, SourceArg)
	case flag != "":
		return ParseSelector(flag, SourceFlag)
	}
	return FromEnv()
}

// normalize is a request's text without "v" and ".x".
func normalize(v string) string {
	return strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(v), "v"), ".x")
}

// Exactly asks for the patch v.
func Exactly(v Version) Selector {
	return Selector{kind: patchVersion, v: v, text: v.String()}
}

// MinorOf asks for the newest patch of v's minor.
func MinorOf(v Version) Selector {
	m := New(v.major, v.minor, 0)
	return Selector{kind: minorVersion, v: m, text: m.minorString()}
}

// Explicit reports whether the selector names a version, rather than
// leaving it to versions.yaml's default.
func (s Selector) Explicit() bool { return s.kind != defaultVersion }

// Exact returns the patch the selector names; ok is false for a minor or
// the default.
func (s Selector) Exact() (v Version, ok bool) { return s.v, s.kind == patchVersion }

// Matches reports whether v is what the selector asks for: the same patch,
// or any patch of the same minor. The default matches every version. It
// asks nobody.
func (s Selector) Matches(v Version) bool {
	switch s.kind {
	case patchVersion:
		return v == s.v
	case minorVersion:
		return v.sameMinor(s.v)
	}
	return true
}

// Source is where the selector came from.
func (s Selector) Source() Source { return s.from }

// Value is the text as the user wrote it ("v1.37", "1.37.x"), trimmed.
func (s Selector) Value() string { return s.text }

// Canonical is what the selector asks for, without "v" or ".x": "1.37" for
// a minor, "1.37.1" for a patch, "" for the default.
func (s Selector) Canonical() string {
	switch s.kind {
	case patchVersion:
		return s.v.String()
	case minorVersion:
		return s.v.minorString()
	}
	return ""
}

// String names the request as the user gave it: "K8S_VERSION=1.36",
// "--version=1.36", "VERSION argument 1.36", "versions.yaml default
// 1.37.1"; "version 1.36" when its source is unknown.
func (s Selector) String() string {
	switch {
	case s.from == SourceEnv || strings.HasPrefix(string(s.from), "-"):
		return string(s.from) + "=" + s.text
	case s.from == "":
		return "version " + s.text
	}
	return string(s.from) + " " + s.text
}

// ask says how to ask for v (a version's text) the way s was asked.
func (s Selector) ask(v string) string {
	switch {
	case s.from == SourceEnv:
		return EnvVar + "=" + v
	case strings.HasPrefix(string(s.from), "-"):
		return string(s.from) + "=" + v
	case s.from == SourceArg:
		return "the VERSION argument " + v
	case s.from == SourceDefault:
		return "default: " + v + " in " + LockfileName
	}
	return v
}

// Drop says how to stop asking for a version the way s asked: "unset
// K8S_VERSION", "drop --version".
func (s Selector) Drop() string {
	switch {
	case s.from == SourceEnv:
		return "unset " + EnvVar
	case strings.HasPrefix(string(s.from), "-"):
		return "drop " + string(s.from)
	case s.from == SourceArg:
		return "drop the VERSION argument"
	}
	return "ask for no version"
}
