package operatortest

import (
	"encoding/json"
	"fmt"
	"reflect"
)

// The abilities this suite's providers offer (harness/cluster's
// Cluster.Abilities). A spec asks for one with cluster.Ability, never by
// the provider's name.

// RealNodes: kubelets run Pods, and the manager runs as config/default
// deploys it (kind, existing clusters).
type RealNodes struct{}

// KindNodes: the cluster's nodes are the Docker containers of kind
// cluster Name, which a spec may inspect or restart.
type KindNodes struct {
	Name string `json:"name"`
}

// LocalControlPlanes: the cluster's control plane runs on this machine from
// binaries the suite resolved, so a spec may start control planes of its
// own from them (the fault environment, a second plane, `kubeharness env
// up`) (envtest).
type LocalControlPlanes struct{}

// Throwaway: the cluster lives for this run only, so a spec may change what
// a cluster that is kept must keep, such as its disposable marker
// (envtest).
type Throwaway struct{}

// abilityTypes are the abilities that cross to parallel Ginkgo processes
// (Share, Connect), by their type names: a new ability is added here.
var abilityTypes = func() map[string]reflect.Type {
	m := map[string]reflect.Type{}
	for _, a := range []any{RealNodes{}, KindNodes{}, LocalControlPlanes{}, Throwaway{}} {
		m[reflect.TypeOf(a).Name()] = reflect.TypeOf(a)
	}
	return m
}()

// sharedAbility is an ability as it crosses to another process.
type sharedAbility struct {
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value"`
}

func encodeAbilities(abilities []any) ([]sharedAbility, error) {
	out := make([]sharedAbility, 0, len(abilities))
	for _, a := range abilities {
		name := reflect.TypeOf(a).Name()
		if _, ok := abilityTypes[name]; !ok {
			return nil, fmt.Errorf("ability %T cannot be shared with other processes: add it to operatortest's abilityTypes", a)
		}
		v, err := json.Marshal(a)
		if err != nil {
			return nil, fmt.Errorf("ability %s: %w", name, err)
		}
		out = append(out, sharedAbility{Type: name, Value: v})
	}
	return out, nil
}

func decodeAbilities(shared []sharedAbility) ([]any, error) {
	out := make([]any, 0, len(shared))
	for _, s := range shared {
		t, ok := abilityTypes[s.Type]
		if !ok {
			return nil, fmt.Errorf("ability %q from the first process is unknown to this one", s.Type)
		}
		p := reflect.New(t)
		if err := json.Unmarshal(s.Value, p.Interface()); err != nil {
			return nil, fmt.Errorf("ability %s: %w", s.Type, err)
		}
		out = append(out, p.Elem().Interface())
	}
	return out, nil
}
