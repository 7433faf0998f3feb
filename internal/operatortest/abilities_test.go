package operatortest

import (
	"reflect"
	"strings"
	"testing"

	"github.com/kubeharness/kubeharness/harness/cluster"
)

// Abilities cross to parallel Ginkgo processes as they were: the same
// types with the same values.
func TestAbilitiesCrossToOtherProcesses(t *testing.T) {
	abilities := []any{RealNodes{}, KindNodes{Name: "kubeharness"}, LocalControlPlanes{}, Throwaway{}}
	shared, err := encodeAbilities(abilities)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeAbilities(shared)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, abilities) {
		t.Errorf("decoded %#v, want %#v", got, abilities)
	}
	type unshared struct{}
	if _, err := encodeAbilities([]any{unshared{}}); err == nil || !strings.Contains(err.Error(), "abilityTypes") {
		t.Errorf("an ability not in abilityTypes: %v; want an error that says where to add it", err)
	}
	if _, err := decodeAbilities([]sharedAbility{{Type: "Teleport", Value: []byte("{}")}}); err == nil {
		t.Error("an unknown ability from the first process: no error")
	}
}

// What the Ginkgo tree is told before the start (ProviderOffers) is what
// the provider's cluster has after it (CheckOffers).
func TestProviderOffers(t *testing.T) {
	for _, tc := range []struct {
		provider         string
		local, realNodes bool
	}{{"", true, false}, {"envtest", true, false}, {"kind", false, true}, {"existing", false, true}, {"nonesuch", false, false}} {
		t.Setenv(ProviderEnv, tc.provider)
		if got := ProviderOffers[LocalControlPlanes](); got != tc.local {
			t.Errorf("PROVIDER=%q: offers LocalControlPlanes = %v, want %v", tc.provider, got, tc.local)
		}
		if got := ProviderOffers[RealNodes](); got != tc.realNodes {
			t.Errorf("PROVIDER=%q: offers RealNodes = %v, want %v", tc.provider, got, tc.realNodes)
		}
		if tc.provider != "nonesuch" && !ProviderOffers[*Operator]() {
			t.Errorf("PROVIDER=%q does not offer the operator", tc.provider)
		}
	}
	started := &cluster.Cluster{Abilities: []any{&Operator{}, RealNodes{}}}
	if err := CheckOffers(&KindProvider{}, started); err == nil || !strings.Contains(err.Error(), "operatortest.KindNodes") {
		t.Errorf("CheckOffers of a kind cluster without KindNodes: %v, want an error naming operatortest.KindNodes", err)
	}
	started.Abilities = append(started.Abilities, KindNodes{Name: "dev"})
	if err := CheckOffers(&KindProvider{}, started); err != nil {
		t.Errorf("CheckOffers of a kind cluster with every ability: %v", err)
	}
}
