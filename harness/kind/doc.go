// Package kind creates, deletes, loads images into and exports the logs of
// kind clusters through the sigs.k8s.io/kind Go API, and picks a node image:
// one named in $KIND_NODE_IMAGE, a pinned stock image when it can be pulled,
// or an offline image the caller knows how to build.
package kind
