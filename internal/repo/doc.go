// Package repo finds this repository's root: the directory below which the
// kubeharness command and the suites read config/, versions.yaml and bin/.
package repo
