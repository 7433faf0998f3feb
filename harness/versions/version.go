package versions

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"golang.org/x/mod/semver"
)

// Version is a release: major.minor.patch, such as Kubernetes 1.37.1 (or
// the etcd 3.7.3 built with it). Pre-releases are no Versions: kubeharness
// builds releases only. The zero Version is no version at all; it prints
// as "".
type Version struct {
	major, minor, patch int
}

// New is the Version major.minor.patch.
func New(major, minor, patch int) Version {
	return Version{major: major, minor: minor, patch: patch}
}

// Parse reads a release, "1.37.1" or "v1.37.1". A minor ("1.37"), a
// pre-release ("1.37.1-rc.0") and anything else are errors that say what
// to write instead.
func Parse(text string) (Version, error) {
	s := scan(text)
	switch {
	case s.kind == patchVersion:
		return s.v, nil
	case s.kind == minorVersion:
		return Version{}, fmt.Errorf("%s names a minor, not a release: write one of its patches, such as %s.0", s.text, s.v.minorString())
	case s.prerelease:
		return Version{}, fmt.Errorf("%s is a pre-release: write a release, such as %s", s.text, s.release)
	}
	return Version{}, fmt.Errorf("%q is not a release: write major.minor.patch, such as 1.37.1, with or without a leading v", s.text)
}

// MustParse is Parse for versions known to be right; it panics otherwise.
func MustParse(text string) Version {
	v, err := Parse(text)
	if err != nil {
		panic(err)
	}
	return v
}

// Major is the major number: 1 of 1.37.1.
func (v Version) Major() int { return v.major }

// Minor is the minor number: 37 of 1.37.1.
func (v Version) Minor() int { return v.minor }

// Patch is the patch number: 1 of 1.37.1.
func (v Version) Patch() int { return v.patch }

// IsZero reports whether v is no version: a field left empty.
func (v Version) IsZero() bool { return v == Version{} }

// String is "1.37.1", without a "v"; "" for the zero Version.
func (v Version) String() string {
	if v.IsZero() {
		return ""
	}
	return fmt.Sprintf("%d.%d.%d", v.major, v.minor, v.patch)
}

// minorString is "1.37" of 1.37.1.
func (v Version) minorString() string { return fmt.Sprintf("%d.%d", v.major, v.minor) }

// sameMinor reports whether v and o are patches of one minor.
func (v Version) sameMinor(o Version) bool { return v.major == o.major && v.minor == o.minor }

// Compare returns -1, 0 or +1 as v is older than, the same as or newer
// than o.
func (v Version) Compare(o Version) int {
	for _, d := range [...]int{v.major - o.major, v.minor - o.minor, v.patch - o.patch} {
		switch {
		case d < 0:
			return -1
		case d > 0:
			return 1
		}
	}
	return 0
}

// Less reports whether v is older than o.
func (v Version) Less(o Version) bool { return v.Compare(o) < 0 }

// Equal reports whether v and o are the same version (as == does; for
// go-cmp, which cannot see v's fields).
func (v Version) Equal(o Version) bool { return v == o }

// MarshalText writes String: versions are strings in JSON and YAML.
func (v Version) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// UnmarshalText reads what Parse reads; empty text is the zero Version.
func (v *Version) UnmarshalText(text []byte) error {
	if strings.TrimSpace(string(text)) == "" {
		*v = Version{}
		return nil
	}
	parsed, err := Parse(string(text))
	if err != nil {
		return err
	}
	*v = parsed
	return nil
}

// kind is what a request names.
type kind uint8

const (
	// defaultVersion: nothing; versions.yaml's default.
	defaultVersion kind = iota
	// minorVersion: the newest patch of a minor.
	minorVersion
	// patchVersion: one patch.
	patchVersion
)

var (
	patchRE = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`)
	minorRE = regexp.MustCompile(`^[0-9]+\.[0-9]+$`)
)

// scanned is what scan made of a version's text.
type scanned struct {
	// text is the text, trimmed of spaces.
	text string
	// kind is patchVersion or minorVersion when the text is one, and
	// defaultVersion when it is neither (or empty).
	kind kind
	// v is the version: for a minor, its patch 0.
	v Version
	// prerelease: the text is a pre-release or carries build metadata;
	// release is the release it belongs to ("1.37.1"), minor its minor.
	prerelease     bool
	release, minor string
}

// scan reads a version's text as a user writes it: a patch ("1.37.1"), a
// minor ("1.37", "1.37.x"), either with a leading "v". It is the one
// parser of version text: Parse and ParseSelector are built on it.
func scan(text string) scanned {
	s := scanned{text: strings.TrimSpace(text)}
	bare := strings.TrimSuffix(strings.TrimPrefix(s.text, "v"), ".x")
	canonical := "v" + bare
	if !semver.IsValid(canonical) {
		return s
	}
	switch {
	case patchRE.MatchString(bare):
		s.kind = patchVersion
	case minorRE.MatchString(bare):
		s.kind = minorVersion
	case semver.Prerelease(canonical) != "" || semver.Build(canonical) != "":
		s.prerelease = true
		s.release = strings.TrimPrefix(strings.TrimSuffix(strings.TrimSuffix(semver.Canonical(canonical), semver.Build(canonical)), semver.Prerelease(canonical)), "v")
		s.minor = strings.TrimPrefix(semver.MajorMinor(canonical), "v")
		return s
	default:
		return s
	}
	var nums [3]int
	for i, part := range strings.Split(bare, ".") {
		n, err := strconv.Atoi(part)
		if err != nil {
			return scanned{text: s.text}
		}
		nums[i] = n
	}
	s.v = New(nums[0], nums[1], nums[2])
	if s.v.IsZero() {
		// 0.0.0 is no release, and would read as no version at all.
		return scanned{text: s.text}
	}
	return s
}
