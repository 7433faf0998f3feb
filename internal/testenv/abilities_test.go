package testenv

import (
	"reflect"
	"strings"
	"testing"
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
