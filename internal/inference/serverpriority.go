package inference

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// ServerPriority is how a model server is told a request's priority, so
// that its own queue orders requests as memagent's task queue and pool do
// (MEMAGENT_MODEL_PRIORITY). Each form is a top-level "priority" field of
// the chat completion's body; only the scale differs. The zero value is
// PriorityOff.
type ServerPriority string

// The forms.
const (
	// PriorityOff sends no priority: the server serves in arrival order
	// (or by whatever it was started with). It is the default, and the
	// only form for a server that refuses unknown fields (OpenAI, Azure).
	PriorityOff ServerPriority = "off"
	// PriorityVLLM sends vLLM's priority, for a server started with
	// --scheduling-policy priority: lower is earlier, the default is 0,
	// and memagent's level L goes out as L−3 (1 → −2, 2 → −1, 3 → 0,
	// 4 → 1, 5 → 2), so that requests of other clients, which carry 0,
	// rank with a review's. A vLLM server under its default policy
	// (fcfs) refuses any priority but 0 with a 400, which Temporal does
	// not retry: turn the policy on before this.
	PriorityVLLM ServerPriority = "vllm"
	// PrioritySGLang sends SGLang's priority, for a server started with
	// --enable-priority-scheduling: larger is earlier (unless the server
	// also has --schedule-low-priority-values-first), a request without
	// one goes after every request with one, and a running request is
	// preempted only by one whose priority exceeds its own by more than
	// --priority-scheduling-preemption-threshold (default 10). Level L goes
	// out as (3−L)×100 (1 → 200, 2 → 100, 3 → 0, 4 → −100, 5 → −200), so
	// that one level apart preempts at the default threshold.
	PrioritySGLang ServerPriority = "sglang"
)

// ParseServerPriority reads one form: "" or "off", "vllm" or "sglang", in
// any case.
func ParseServerPriority(s string) (ServerPriority, error) {
	switch p := ServerPriority(strings.ToLower(strings.TrimSpace(s))); p {
	case "", PriorityOff:
		return PriorityOff, nil
	case PriorityVLLM, PrioritySGLang:
		return p, nil
	}
	return "", fmt.Errorf("model server priority %q: use vllm (vLLM started with --scheduling-policy priority), sglang (SGLang started with --enable-priority-scheduling) or off", s)
}

// Value is the priority the server is sent for memagent's level (1 most
// urgent … 5; outside that range it is clamped, and 0 counts as 3, as in
// the pool's own queue), and whether one is sent at all.
func (p ServerPriority) Value(level int) (int, bool) {
	if level == 0 {
		level = 3
	}
	level = min(max(level, 1), 5)
	switch p {
	case PriorityVLLM:
		return level - 3, true
	case PrioritySGLang:
		return (3 - level) * 100, true
	}
	return 0, false
}

// SetServerPriorities gives eps their forms from forms
// (MEMAGENT_MODEL_PRIORITY, split at commas): none leaves every endpoint
// off, one applies to all, and one for each endpoint, in order, gives each
// its own, for a pool that mixes servers. Any other count, or a form
// ParseServerPriority refuses, is an error.
func SetServerPriorities(eps []EndpointConfig, forms []string) error {
	if len(forms) == 0 {
		return nil
	}
	if len(forms) != 1 && len(forms) != len(eps) {
		return fmt.Errorf("%d model server priorities for %d model servers: give one for all, or one for each server in the order of the base URLs", len(forms), len(eps))
	}
	parsed := make([]ServerPriority, len(forms))
	for i, f := range forms {
		p, err := ParseServerPriority(f)
		if err != nil {
			return err
		}
		parsed[i] = p
	}
	for i := range eps {
		eps[i].Priority = parsed[min(i, len(parsed)-1)]
	}
	return nil
}

// addBodyField returns the JSON object body with member (`"name":value`)
// added first, or body unchanged when it is not an object.
func addBodyField(body []byte, member string) []byte {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return body
	}
	rest := bytes.TrimLeft(trimmed[1:], " \t\r\n")
	out := make([]byte, 0, len(body)+len(member)+1)
	out = append(out, '{')
	out = append(out, member...)
	if len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, rest...)
}

// priorityMember is the JSON member that carries priority v.
func priorityMember(v int) string { return `"priority":` + strconv.Itoa(v) }
