// Package faults injects failures between and into the parts of a running
// environment: Proxy stands between clients (a controller manager, a
// test's own client) and the API server, serving with the API server's own
// certificate or one it makes (Proxy.ClientConfig trusts it), passes each
// request on as the client that sent it (it has no identity of its own to
// lend), and delays requests, answers a share of them with 429 or a 5xx
// Status, or resets streams; Timeline records every fault injected, for a
// failure bundle.
package faults
