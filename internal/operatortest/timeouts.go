package operatortest

import "time"

// Named waits for specs: every Eventually and Consistently uses one of these.
const (
	// Poll is how often Eventually and Consistently look again.
	Poll = 100 * time.Millisecond
	// Reconcile bounds how long a controller may take to act on a change.
	Reconcile = 20 * time.Second
	// NoHotLoopWindow is how long an object must stay unchanged to show that
	// a controller is not rewriting it in a loop. A controller that writes
	// on every event it causes goes round in milliseconds; one that fails
	// and requeues backs off from 5 ms, doubling (controller-runtime's
	// default), so it retries 9 times in the first 2.6 s.
	NoHotLoopWindow = 3 * time.Second
	// AfterDecision is how long a state must hold once a controller has
	// reported (in a status condition, or by finishing a deletion) that it
	// saw a change and decided to leave something alone: enough for a
	// requeue or the garbage collector to act on a wrong decision.
	AfterDecision = 2 * time.Second
	// Unnoticed is how long an object a controller must ignore (another
	// signer's certificate request) stays untouched where the controller
	// reports nothing about it: no decision to wait for, so a window.
	Unnoticed = 3 * time.Second
	// GarbageCollection bounds how long the garbage collector may take to
	// remove dependents once their owner is gone.
	GarbageCollection = 60 * time.Second
	// BulkReconcile bounds how long a thousand objects created at once may
	// take to be reconciled.
	BulkReconcile = 3 * time.Minute
)
