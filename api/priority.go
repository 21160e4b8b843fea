package api

import (
	"fmt"

	"go.temporal.io/sdk/temporal"
)

// Default priorities of memagent's runs on a shared task queue (1 highest,
// 5 lowest): a person waiting for one answer goes before a review, which
// goes before a batch.
const (
	PriorityQuestion = 2
	PriorityReview   = 3
	PriorityBatch    = 4
	// MaxPriority is the lowest priority (the largest number) accepted.
	MaxPriority = 5
	// MaxFairnessKeyBytes is Temporal's limit on a fairness key.
	MaxFairnessKeyBytes = 64
	// MaxFairnessWeight is the largest weight Temporal honours.
	MaxFairnessWeight = 1000
)

// Scheduling is the priority part of a workflow input, as given: what
// Temporal's task queue orders and shares the run's tasks by.
type Scheduling struct {
	Priority       int
	FairnessKey    string
	FairnessWeight float64
}

// Validate reports values Temporal would refuse or ignore.
func (s Scheduling) Validate() error {
	switch {
	case s.Priority < 0 || s.Priority > MaxPriority:
		return fmt.Errorf("priority (%d) must be within [1, %d] (1 is highest), or 0 for the default", s.Priority, MaxPriority)
	case len(s.FairnessKey) > MaxFairnessKeyBytes:
		return fmt.Errorf("fairness_key is %d bytes: at most %d", len(s.FairnessKey), MaxFairnessKeyBytes)
	case s.FairnessWeight < 0 || s.FairnessWeight > MaxFairnessWeight:
		return fmt.Errorf("fairness_weight (%g) must be within (0, %d], or 0 for the default (1)", s.FairnessWeight, MaxFairnessWeight)
	case s.FairnessWeight > 0 && s.FairnessKey == "":
		return fmt.Errorf("fairness_weight (%g) needs a fairness_key to weigh", s.FairnessWeight)
	}
	return nil
}

// Start is the priority to start a run with: the given fields, the level
// defaulting to def. Fairness has no default key.
func (s Scheduling) Start(def int) temporal.Priority {
	p := temporal.Priority{PriorityKey: s.Priority, FairnessKey: s.FairnessKey, FairnessWeight: float32(s.FairnessWeight)}
	if p.PriorityKey == 0 {
		p.PriorityKey = def
	}
	return p
}

// StartPriority is the temporal.Priority to start the run with
// (client.StartWorkflowOptions.Priority): its priority, default
// PriorityQuestion, and fairness key and weight. Starting with it orders
// the run's own workflow tasks too; the workflow gives its activities the
// same.
func (in DocumentQAInput) StartPriority() temporal.Priority {
	return in.Scheduling().Start(PriorityQuestion)
}

// StartPriority is the temporal.Priority to start the review with; the
// level defaults to PriorityReview.
func (in ReviewInput) StartPriority() temporal.Priority {
	return in.Scheduling().Start(PriorityReview)
}

// StartPriority is the temporal.Priority to start the batch with; the
// level defaults to PriorityBatch.
func (in BatchQAInput) StartPriority() temporal.Priority {
	return in.Scheduling().Start(PriorityBatch)
}
