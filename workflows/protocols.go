package workflows

import (
	"errors"
	"fmt"
)

// batchProbe, when a test sets it, is called with a BatchQA run after
// every step of its window, every Update it serves, its hand-over and its
// close (at says which), so that the randomized test checks the
// protocols' invariants (batchRun.invariants) as the real code runs. Nil
// outside tests; it changes nothing the run does.
var batchProbe func(b *batchRun, at string)

func (b *batchRun) probe(at string) {
	if batchProbe != nil {
		batchProbe(b, at)
	}
}

// invariants reports the protocols' invariants that do not hold: each
// type's own (batchChildren, grantLedger, batchOutbox) and those between
// them. closing says the run is about to close (complete or continue as
// new), when its outbox must be quiet.
func (b *batchRun) invariants(closing bool) error {
	var errs []error
	if err := b.kids.invariants(); err != nil {
		errs = append(errs, fmt.Errorf("children: %w", err))
	}
	if err := b.ledger.invariants(b.in.Budget); err != nil {
		errs = append(errs, fmt.Errorf("ledger: %w", err))
	}
	for _, id := range sortedIDs(b.ledger.Grants) {
		if !b.kids.has(id) {
			errs = append(errs, fmt.Errorf("ledger: %s holds a grant and is not a running child", id))
		}
	}
	if b.in.Budget != nil {
		for _, id := range b.kids.ids() {
			if !b.ledger.holds(id) {
				errs = append(errs, fmt.Errorf("ledger: running child %s of a batch with a budget holds no grant", id))
			}
		}
	}
	if closing && b.out.awaits() && !b.out.quiet() {
		errs = append(errs, fmt.Errorf("outbox: the run closes with %d sends pending and %d requests served", len(b.out.sends), len(b.out.asking)))
	}
	return errors.Join(errs...)
}
