// Package cluster is what a suite talks to and where it comes from.
//
// A Cluster is a running API server with the clients a suite uses. A
// Provider brings one up and tears it down: Envtest runs a control plane
// of the suite's own (harness/controlplane), Existing connects to the
// cluster of a kubeconfig, and harness/kind's Provider makes a kind
// cluster. What only some providers can do is an interface of its own that
// a suite asks for with a type assertion, rather than a flag to branch on:
//
//	if l, ok := provider.(cluster.ImageLoader); ok {
//		err = l.LoadImages(ctx, "example.com/manager:dev")
//	}
//
// What a spec needs of the cluster itself, in every parallel process
// (where the provider ran in the first), the provider puts in the
// Cluster's Abilities, values of the suite's own types, and a spec asks
// for it by type:
//
//	if _, ok := cluster.Ability[RealNodes](c); !ok {
//		Skip("needs kubelets that run Pods")
//	}
//
// A suite creates and deletes objects cluster-wide, so a cluster it did not
// make must say it may be broken: Existing refuses one without the
// disposable marker (MarkDisposable, which the providers that make a
// cluster leave in it).
package cluster
