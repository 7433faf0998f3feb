package faultenv

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeharness/kubeharness/internal/scheme"
	opsv1 "github.com/kubeharness/kubeharness/operator/api/ops/v1"
)

// AdmissionProbe sends a server-side dry-run Playbook create through the
// API server (and so through the Playbook webhooks) every interval, and
// keeps each answer, so that a spec can count the admissions a fault cost.
type AdmissionProbe struct {
	mu      sync.Mutex
	results []AdmissionResult
	cancel  context.CancelFunc
	done    chan struct{}
}

// AdmissionResult is one probe's answer.
type AdmissionResult struct {
	// At is when the request was sent.
	At  time.Time
	Err error
}

// AdmissionProbeInterval is how often the probe asks.
const AdmissionProbeInterval = 100 * time.Millisecond

// StartAdmissionProbe probes as cfg (an admin) in namespace until Stop.
func StartAdmissionProbe(cfg *rest.Config, namespace string) (*AdmissionProbe, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = 2 * time.Second
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &AdmissionProbe{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		var inflight sync.WaitGroup
		defer inflight.Wait()
		t := time.NewTicker(AdmissionProbeInterval)
		defer t.Stop()
		for {
			// One request per tick, each on its own: a request that hangs
			// (a frozen API server) does not stop the next from being sent,
			// so every tick of a fault counts.
			sent := time.Now()
			inflight.Go(func() {
				pb := &opsv1.Playbook{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Namespace: namespace},
					Spec: opsv1.PlaybookSpec{Abstract: "  admission probe  "}}
				err := c.Create(ctx, pb, client.DryRunAll)
				if err == nil && pb.Spec.Abstract != "admission probe" {
					err = fmt.Errorf("admitted without the defaulting webhook: abstract %q", pb.Spec.Abstract)
				}
				if ctx.Err() != nil {
					return
				}
				p.mu.Lock()
				p.results = append(p.results, AdmissionResult{At: sent, Err: err})
				p.mu.Unlock()
			})
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return p, nil
}

// Stop ends probing.
func (p *AdmissionProbe) Stop() {
	p.cancel()
	<-p.done
}

// Between counts the answers to requests sent from start to end, and the failed ones, with
// the last failure.
func (p *AdmissionProbe) Between(start, end time.Time) (total, failed int, last error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.results {
		if r.At.Before(start) || r.At.After(end) {
			continue
		}
		total++
		if r.Err != nil {
			failed++
			last = r.Err
		}
	}
	return total, failed, last
}

// Since returns the answers to requests sent from start on, in the order
// they came.
func (p *AdmissionProbe) Since(start time.Time) []AdmissionResult {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []AdmissionResult
	for _, r := range p.results {
		if !r.At.Before(start) {
			out = append(out, r)
		}
	}
	return out
}
