package inference

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DefaultPriorityHold is the level MEMAGENT_MODEL_PRIORITY_HOLD=on means:
// a question's calls (memagent's priority 2) and more urgent ones hold back
// the rest; reviews (3) and batches (4) do not hold back each other.
const DefaultPriorityHold = 2

// MaxHold bounds how long a call is held back (PoolConfig.PriorityHold):
// once a call of some level has waited that long, the level's calls start
// as they would without the hold, so that a stream of urgent calls that
// never pauses cannot starve the rest.
const MaxHold = 30 * time.Second

// HoldLinger is how long an endpoint keeps holding back less urgent calls
// after its last more urgent call ended. A run's calls are sequential, one
// activity after another: between the end of one and the start of the next
// there is the activity's completion, a workflow task and the next
// activity's dispatch, tens of milliseconds. Without the linger every such
// gap would let the held calls in, and their prompts would be prefilled in
// the very steps the next urgent call decodes in.
const HoldLinger = time.Second

// ParsePriorityHold reads MEMAGENT_MODEL_PRIORITY_HOLD: "off" (or "0")
// holds nothing back; "on" is DefaultPriorityHold; a level 1–4 makes calls
// of that priority or a more urgent one hold back the less urgent ones.
func ParsePriorityHold(s string) (int, error) {
	switch v := strings.ToLower(strings.TrimSpace(s)); v {
	case "off", "0", "false", "no":
		return 0, nil
	case "on", "true", "yes":
		return DefaultPriorityHold, nil
	default:
		if n, err := strconv.Atoi(v); err == nil && n >= 1 && n < holdLevels {
			return n, nil
		}
	}
	return 0, fmt.Errorf("model priority hold %q: want on (%d: questions hold back reviews and batches), off, or the least urgent priority that holds back the others, 1 to %d", s, DefaultPriorityHold, holdLevels-1)
}

// holdLevels is the levels the hold tells apart: 1 … 5, as memagent's
// priorities; a level outside counts as the nearest.
const holdLevels = 5

func holdLevel(level int) int { return min(max(level, 1), holdLevels) }

// holdState is what an endpoint knows of its calls by level, for the hold;
// guarded by Pool.mu.
type holdState struct {
	inFlight [holdLevels + 1]int       // calls outstanding, by level
	lastEnd  [holdLevels + 1]time.Time // when the latest call of the level ended
}

// heldLocked reports whether a call of level must not start at ep at now:
// a more urgent call of a level that holds (PoolConfig.PriorityHold or
// more urgent) is outstanding there, or ended less than HoldLinger ago.
func (p *Pool) heldLocked(ep *endpoint, level int, now time.Time) bool {
	for l := 1; l < holdLevel(level) && l <= p.hold; l++ {
		if ep.hold.inFlight[l] > 0 || now.Before(ep.hold.lastEnd[l].Add(HoldLinger)) {
			return true
		}
	}
	return false
}

// holdExpiredLocked reports whether some waiter of level has waited
// MaxHold or longer: then the hold no longer applies to the
// level, and its calls start as they would without it.
func (p *Pool) holdExpiredLocked(level int, now time.Time) bool {
	since, ok := p.waiters.oldest(level)
	return ok && now.Sub(since) >= p.maxHold
}

// holdWakeLocked is the next time the hold may let a waiter through that
// nothing else signals (a linger ending, a waiter reaching the bound), or
// the zero time.
func (p *Pool) holdWakeLocked(now time.Time) time.Time {
	if p.hold <= 0 || p.waiters.Len() == 0 {
		return time.Time{}
	}
	var next time.Time
	earlier := func(t time.Time) {
		if t.After(now) && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	for _, ep := range p.endpoints {
		for l := 1; l <= holdLevels; l++ {
			earlier(ep.hold.lastEnd[l].Add(HoldLinger))
		}
	}
	if since, ok := p.waiters.oldestAny(); ok {
		earlier(since.Add(p.maxHold))
	}
	return next
}
