package controlplane

import (
	"reflect"
	"testing"
)

func TestPorts(t *testing.T) {
	etcd := []string{"--data-dir=/x",
		"--listen-client-urls=http://127.0.0.1:2379", "--advertise-client-urls=http://127.0.0.1:2379",
		"--listen-peer-urls=http://127.0.0.1:2380"}
	api := []string{"--secure-port=6443", "--etcd-servers=http://127.0.0.1:2379"}
	want := map[string]int{"etcd-client": 2379, "etcd-peer": 2380, "kube-apiserver": 6443}
	if got := ports(etcd, api); !reflect.DeepEqual(got, want) {
		t.Errorf("ports() = %v, want %v", got, want)
	}
	if got := (&ControlPlane{}).Ports(); len(got) != 0 {
		t.Errorf("Ports() of a control plane that never ran = %v", got)
	}
}
