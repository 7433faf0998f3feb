// Package faults injects failures between and into the parts of a running
// environment: Proxy stands between a client (a controller manager) and the
// API server, serving with the API server's own certificate, and delays its
// requests, answers a share of them with 429 or a 5xx Status, or resets
// streams; Timeline records every fault injected, for a failure bundle.
package faults
