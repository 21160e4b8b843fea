package inference

import (
	"fmt"
	"strconv"
	"strings"
)

// ReserveLevel is the least urgent priority that may use an endpoint's
// reserve (PoolConfig.PriorityReserve): questions (memagent's priority 2)
// and anything more urgent, the calls a person waits for. Reviews (3) and
// batches (4) are throughput work and never go beyond a cap.
const ReserveLevel = 2

// PriorityReserveAuto, as PoolConfig.PriorityReserve, gives each endpoint
// DefaultPriorityReserve of its cap.
const PriorityReserveAuto = -1

// maxPriorityReserve bounds an explicit reserve: a reserve is a few slots
// for urgent calls, not a second cap.
const maxPriorityReserve = 1024

// DefaultPriorityReserve is the reserve PriorityReserveAuto gives an
// endpoint of cap maxInFlight: a quarter of it, rounded up (16 → 4,
// 64 → 16). It is sized so that a few questions started at once all find
// a slot at once, while the server never holds more than a quarter above
// what the operator sized its batch for.
func DefaultPriorityReserve(maxInFlight int) int { return max(1, (maxInFlight+3)/4) }

// ParsePriorityReserve reads MEMAGENT_MODEL_PRIORITY_RESERVE: "" or "auto"
// is PriorityReserveAuto, "off" (or "0") none, and a whole number 1–1024
// that many slots per endpoint.
func ParsePriorityReserve(s string) (int, error) {
	switch v := strings.ToLower(strings.TrimSpace(s)); v {
	case "", "auto":
		return PriorityReserveAuto, nil
	case "off", "0", "false", "no":
		return 0, nil
	default:
		if n, err := strconv.Atoi(v); err == nil && n >= 1 && n <= maxPriorityReserve {
			return n, nil
		}
	}
	return 0, fmt.Errorf("model priority reserve %q: want auto (a quarter of each server's in-flight cap), off, or the calls of priority 1-%d a server may take beyond its cap, 1 to %d", s, ReserveLevel, maxPriorityReserve)
}

// endpointReserve is the reserve an endpoint of cap maxInFlight told
// priorities in form gets from PoolConfig.PriorityReserve n: none unless
// its server orders requests by priority, since a server serving first
// come, first served would only queue the urgent call behind the others.
func endpointReserve(n int, form ServerPriority, maxInFlight int) int {
	if _, ordered := form.Value(ReserveLevel); !ordered || n == 0 {
		return 0
	}
	if n == PriorityReserveAuto {
		return DefaultPriorityReserve(maxInFlight)
	}
	return max(n, 0)
}

// limitLocked is how many calls, this one included, ep may have
// outstanding for a call of level to start there: its cap, or its cap plus
// its reserve for an urgent call, one of ReserveLevel or more urgent that
// is also more urgent than the least urgent call outstanding at ep. Such a
// call goes to a server that orders by priority (endpointReserve) and has
// a less urgent sequence to preempt for it, as SGLang does under
// --enable-priority-scheduling. Less urgent calls never start while ep
// has its cap or more outstanding, reserved calls included, so the cap is
// exceeded only by urgent calls and by at most the reserve.
func (p *Pool) limitLocked(ep *endpoint, level int) int {
	if ep.reserve == 0 {
		return ep.maxInFlight
	}
	l := holdLevel(level)
	if l > ReserveLevel || l >= ep.leastUrgentLocked() {
		return ep.maxInFlight
	}
	return ep.maxInFlight + ep.reserve
}

// leastUrgentLocked is the least urgent level of the calls outstanding at
// ep, or 0 when none is.
func (ep *endpoint) leastUrgentLocked() int {
	for l := holdLevels; l >= 1; l-- {
		if ep.hold.inFlight[l] > 0 {
			return l
		}
	}
	return 0
}
