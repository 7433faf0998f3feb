// Package admissiontest replays AdmissionReview fixtures against webhook
// handlers and compares the outcome with golden files, and serves fuzzed
// request bodies to webhooks, checking what every answer must be.
package admissiontest
