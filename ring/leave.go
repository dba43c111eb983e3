package ring

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// leave hands everything over before going: it marks its Lease leaving
// (the others plan without it and cache its buckets), runs rounds that
// release each bucket once its successor has it cached, and after half of
// RenewDeadline releases what is left regardless; then it records that it
// holds nothing and deletes its Lease. All within RenewDeadline. What it
// releases regardless its successors may not have cached yet: it is
// published as abandoned (AnnotationStopped, with the positions its
// handlers had reached before its gate closed), so that they replay the
// deletes made since rather than lose a change made in between. Without
// a Lease (none written yet, or lost and none of its name found since)
// there is nothing to hand over: it holds nothing.
func (r *Ring) leave(st *state) error {
	if st.lease == nil && st.found == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.RenewDeadline)
	defer cancel()
	st.leaving = true
	handover, stop := context.WithTimeout(ctx, r.cfg.RenewDeadline/2)
	if err := r.write(handover, st, st.held); err != nil {
		r.stat.failed(fmt.Errorf("announcing the leave: %w", err))
	}
	for handover.Err() == nil && st.held.len() > 0 {
		r.round(handover, st)
		t := r.cfg.Clock.NewTimer(r.cfg.RetryPeriod / 4)
		select {
		case <-handover.Done():
		case <-t.C():
		}
		t.Stop()
	}
	stop()
	if st.held.len() > 0 {
		// Taken before the gate closes: every change after it may not
		// have reached a handler.
		st.abandoned = r.reg.handled()
	}
	r.gate.close(fullSet(r.cfg.Buckets))
	if r.cfg.Drain != nil && st.held.len() > 0 {
		if sh, ok := shardOf(st.held, r.cfg.Key); ok {
			_ = r.cfg.Drain(ctx, sh)
		}
	}
	if err := r.write(ctx, st, newSet(r.cfg.Buckets)); err != nil {
		r.stat.failed(fmt.Errorf("leaving: %w; others take over when the Lease expires", err))
		return nil
	}
	err := r.cfg.Client.Leases(r.cfg.Namespace).Delete(ctx, r.lease, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		r.stat.failed(fmt.Errorf("deleting Lease %s on leaving: %w", r.lease, err))
	}
	r.stat.left()
	return nil
}
