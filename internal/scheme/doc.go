// Package scheme is the one runtime.Scheme of this repository's operator:
// client-go's built-in types, CustomResourceDefinitions, and the operator's
// own types (Playbooks, AppServices, VirtualMachines). The manager runs
// with it, the webhooks' tests decode with it, and the specs' clients
// speak it. It imports nothing but API types, so that a test binary can
// have it without the manager's metrics and authentication stack.
package scheme
