// Package admissiontest replays AdmissionReview fixtures against webhook
// handlers and compares the outcome with golden files.
package admissiontest
