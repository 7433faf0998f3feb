package operatortest

import (
	"fmt"
	"strings"

	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/version"
)

// DeleteValidationMinVersion is the first Kubernetes version whose API
// server sends oldObject in DELETE admission reviews, which validating a
// delete needs.
var DeleteValidationMinVersion = utilversion.MustParseGeneric("1.15.0")

// ParseServerVersion reads a /version answer. GitVersion ("v1.37.1",
// "v1.15.3-gke.1") is used when it parses; otherwise Major and Minor, which
// some providers suffix with "+" ("15+").
func ParseServerVersion(info *version.Info) (*utilversion.Version, error) {
	if info == nil {
		return nil, fmt.Errorf("no server version")
	}
	if v, err := utilversion.ParseGeneric(info.GitVersion); err == nil {
		return v, nil
	}
	major, minor := strings.TrimSuffix(info.Major, "+"), strings.TrimSuffix(info.Minor, "+")
	v, err := utilversion.ParseGeneric(major + "." + minor)
	if err != nil {
		return nil, fmt.Errorf("server version gitVersion=%q major=%q minor=%q is not a version", info.GitVersion, info.Major, info.Minor)
	}
	return v, nil
}

// SupportsDeleteValidation reports whether a server of this version sends
// oldObject on DELETE, and when not, why.
func SupportsDeleteValidation(info *version.Info) (bool, string) {
	v, err := ParseServerVersion(info)
	if err != nil {
		return false, err.Error()
	}
	if v.LessThan(DeleteValidationMinVersion) {
		return false, fmt.Sprintf("server %s sends no oldObject on DELETE admission; delete validation needs Kubernetes %s or newer", v, DeleteValidationMinVersion)
	}
	return true, ""
}
