// Package playbook implements the Playbook defaulting and validating
// (create, update and delete) admission webhooks.
package playbook
