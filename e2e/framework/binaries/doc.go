// Package binaries finds and builds the control-plane binaries (etcd,
// kube-apiserver) the envtest provider runs, from source through the Go
// module proxy, for the Kubernetes versions listed in versions.yaml.
package binaries
