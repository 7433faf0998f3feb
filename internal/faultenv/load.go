package faultenv

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/kubeharness/kubeharness/operator/api/ops/v1"
)

// ConflictStorm has Writers goroutines update each of the Playbooks
// storm-0…storm-<Playbooks-1> in Namespace Updates times, with full
// updates that conflict with each other and with the Playbook controller's
// own writes, retrying on conflict as clients do.
type ConflictStorm struct {
	Client                      client.Client
	Namespace                   string
	Playbooks, Writers, Updates int
}

// StormResult is what a storm took.
type StormResult struct {
	Took      time.Duration
	Conflicts int
}

func (s ConflictStorm) name(i int) string { return fmt.Sprintf("storm-%d", i) }

// writerLabel is the label a writer sets to the number of its update.
func writerLabel(w int) string { return fmt.Sprintf("storm.kubeharness.dev/writer-%d", w) }

// stormRetry retries a writer's update until it lands: with ten writers
// on one object, client-go's DefaultRetry (5 tries) gives up by design.
// No Cap: wait.Backoff stops retrying once the cap is reached.
var stormRetry = wait.Backoff{Steps: 30, Duration: 5 * time.Millisecond, Factor: 1.3, Jitter: 1}

// Run runs the storm and returns once every update landed.
//
// The storm collides by construction, not by the scheduler's luck: every
// writer first reads every Playbook and, only once all writers have read,
// sends its first update of each from what it read. Of the writers holding
// one resourceVersion at most one lands, so Conflicts is at least
// (Writers-1) × Playbooks (MinConflicts).
func (s ConflictStorm) Run(ctx context.Context) (StormResult, error) {
	var (
		mu        sync.Mutex
		conflicts int
		errs      []error
		wg        sync.WaitGroup
		read      sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	start := time.Now()
	read.Add(s.Writers)
	for w := range s.Writers {
		wg.Go(func() {
			first := make([]*opsv1.Playbook, s.Playbooks)
			var readErr error
			for i := range s.Playbooks {
				first[i] = &opsv1.Playbook{}
				if readErr = s.Client.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: s.name(i)}, first[i]); readErr != nil {
					break
				}
			}
			read.Done()
			if readErr != nil {
				fail(fmt.Errorf("writer %d, reading: %w", w, readErr))
				return
			}
			read.Wait()
			for u := range s.Updates {
				for i := range s.Playbooks {
					err := retry.RetryOnConflict(stormRetry, func() error {
						pb := first[i]
						first[i] = nil
						if pb == nil {
							pb = &opsv1.Playbook{}
							if err := s.Client.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: s.name(i)}, pb); err != nil {
								return err
							}
						}
						if pb.Labels == nil {
							pb.Labels = map[string]string{}
						}
						pb.Labels[writerLabel(w)] = strconv.Itoa(u)
						pb.Spec.Abstract = fmt.Sprintf("writer %d update %d", w, u)
						err := s.Client.Update(ctx, pb)
						if apierrors.IsConflict(err) {
							mu.Lock()
							conflicts++
							mu.Unlock()
						}
						return err
					})
					if err != nil {
						fail(fmt.Errorf("writer %d, update %d of %s: %w", w, u, s.name(i), err))
						return
					}
				}
			}
		})
	}
	wg.Wait()
	return StormResult{Took: time.Since(start), Conflicts: conflicts}, errors.Join(errs...)
}

// MinConflicts is the fewest conflicts Run can meet: all writers but one
// of each Playbook's first updates.
func (s ConflictStorm) MinConflicts() int { return (s.Writers - 1) * s.Playbooks }

// Converged returns nil once every Playbook carries every writer's last
// update (none was lost) and the controller caught up with the last
// abstract: Ready for the current generation, with exactly one notes
// ConfigMap holding that abstract.
func (s ConflictStorm) Converged(ctx context.Context) error {
	var problems []string
	for i := range s.Playbooks {
		pb := &opsv1.Playbook{}
		if err := s.Client.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: s.name(i)}, pb); err != nil {
			return err
		}
		for w := range s.Writers {
			if got, want := pb.Labels[writerLabel(w)], strconv.Itoa(s.Updates-1); got != want {
				problems = append(problems, fmt.Sprintf("%s: writer %d's last update lost (label %q, want %q)", pb.Name, w, got, want))
			}
		}
		c := meta.FindStatusCondition(pb.Status.Conditions, opsv1.ConditionReady)
		if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != pb.Generation {
			problems = append(problems, fmt.Sprintf("%s: not Ready for generation %d (%v)", pb.Name, pb.Generation, c))
			continue
		}
		cm := &corev1.ConfigMap{}
		if err := s.Client.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: pb.NotesConfigMapName()}, cm); err != nil {
			problems = append(problems, fmt.Sprintf("%s: notes: %v", pb.Name, err))
			continue
		}
		if cm.Data["abstract"] != pb.Spec.Abstract {
			problems = append(problems, fmt.Sprintf("%s: notes hold %q, the Playbook %q", pb.Name, cm.Data["abstract"], pb.Spec.Abstract))
		}
	}
	var cms corev1.ConfigMapList
	if err := s.Client.List(ctx, &cms, client.InNamespace(s.Namespace)); err != nil {
		return err
	}
	owned := map[string]int{}
	for _, cm := range cms.Items {
		if ref := metav1.GetControllerOf(&cm); ref != nil && ref.Kind == "Playbook" {
			owned[ref.Name]++
		}
	}
	for name, n := range owned {
		if n > 1 {
			problems = append(problems, fmt.Sprintf("%s controls %d ConfigMaps", name, n))
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// CreatePlaybooks creates n Playbooks <prefix>-<i> in namespace, parallel
// at a time, and returns every error.
func CreatePlaybooks(ctx context.Context, c client.Client, namespace, prefix string, n, parallel int) error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	sem := make(chan struct{}, parallel)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			pb := &opsv1.Playbook{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%04d", prefix, i), Namespace: namespace},
				Spec: opsv1.PlaybookSpec{Abstract: fmt.Sprintf("playbook %d", i)}}
			if err := c.Create(ctx, pb); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("%d of %d creates failed, first: %w", len(errs), n, errs[0])
	}
	return nil
}

// ReadyPlaybooks counts the Playbooks in namespace that are Ready for
// their current generation (their notes ConfigMap is in place).
func ReadyPlaybooks(ctx context.Context, c client.Client, namespace string) (int, error) {
	var pbs opsv1.PlaybookList
	if err := c.List(ctx, &pbs, client.InNamespace(namespace)); err != nil {
		return 0, err
	}
	n := 0
	for _, pb := range pbs.Items {
		if c := meta.FindStatusCondition(pb.Status.Conditions, opsv1.ConditionReady); c != nil &&
			c.Status == metav1.ConditionTrue && c.ObservedGeneration == pb.Generation {
			n++
		}
	}
	return n, nil
}
