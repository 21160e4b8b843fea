package memagent

import (
	"errors"
	"strings"
)

// InitialMemory is the memory handed to the first update call, before any
// chunk has been read.
const InitialMemory = "No previous memory"

// The placeholders recognised in templates.
const (
	placeholderQuestion = "{question}"
	placeholderMemory   = "{memory}"
	placeholderChunk    = "{chunk}"
)

const defaultUpdateTemplate = `You are working through a long document one section at a time in order to answer a question. You cannot go back to earlier sections: the only thing you carry forward is your memory, so it must hold everything that may matter.

<problem>
{question}
</problem>

<memory>
{memory}
</memory>

<section>
{chunk}
</section>

Write a new version of the memory. Keep every fact from the current memory and from this section that could help answer the problem: names, numbers, dates, places, how things relate, and any partial conclusion. Leave out whatever is irrelevant to the problem. Be concise, and output only the new memory with no introduction.

Updated memory:
`

const defaultFinalTemplate = `You have read a long document section by section and kept the memory below. The document itself is no longer available; answer the problem from the memory alone.

<problem>
{question}
</problem>

<memory>
{memory}
</memory>

Think briefly if you need to, then write your final answer inside \boxed{}. If the memory is not enough to be sure, give your best guess inside \boxed{} all the same.
`

// Templates are the two prompts of the method. Update is rendered once per
// chunk with {question}, {memory} and {chunk}; Final is rendered once at the
// end with {question} and {memory}. An empty field renders as the
// corresponding default template, so the zero Templates is usable.
type Templates struct {
	Update string
	Final  string
}

// DefaultTemplates returns the project's own prompts, which use the
// <problem>, <memory> and <section> tag layout.
func DefaultTemplates() Templates {
	return Templates{Update: defaultUpdateTemplate, Final: defaultFinalTemplate}
}

// ParseTemplates checks user-supplied templates and returns them. The update
// template must contain {question}, {memory} and {chunk}; the final template
// must contain {question} and {memory} and must not contain {chunk}. The
// error lists every problem found.
func ParseTemplates(update, final string) (Templates, error) {
	var problems []string
	if missing := missingPlaceholders(update, placeholderQuestion, placeholderMemory, placeholderChunk); missing != "" {
		problems = append(problems, "update template is missing "+missing)
	}
	if missing := missingPlaceholders(final, placeholderQuestion, placeholderMemory); missing != "" {
		problems = append(problems, "final template is missing "+missing)
	}
	if strings.Contains(final, placeholderChunk) {
		problems = append(problems, "final template must not contain {chunk} (the final call sees only the question and the memory)")
	}
	if len(problems) > 0 {
		return Templates{}, errors.New("parse templates: " + strings.Join(problems, "; "))
	}
	return Templates{Update: update, Final: final}, nil
}

func missingPlaceholders(tmpl string, placeholders ...string) string {
	var missing []string
	for _, p := range placeholders {
		if !strings.Contains(tmpl, p) {
			missing = append(missing, p)
		}
	}
	return strings.Join(missing, ", ")
}

// RenderUpdate returns the memory-update prompt for one chunk. Substitution
// is a single pass: placeholders inside the question, memory or chunk are
// copied literally, and whatever in them a model could read as one of the
// template's tags is neutralized (see [NeutralizeTags]).
func (t Templates) RenderUpdate(question, memory, chunk string) string {
	tmpl := t.Update
	if tmpl == "" {
		tmpl = defaultUpdateTemplate
	}
	tags := TemplateTags(tmpl)
	return substitute(tmpl, [...]string{NeutralizeTags(question, tags), NeutralizeTags(memory, tags), NeutralizeTags(chunk, tags)})
}

// RenderFinal returns the prompt that asks for the answer from the memory.
// Substitution is a single pass, as for [Templates.RenderUpdate].
func (t Templates) RenderFinal(question, memory string) string {
	tmpl := t.Final
	if tmpl == "" {
		tmpl = defaultFinalTemplate
	}
	tags := TemplateTags(tmpl)
	return substitute(tmpl, [...]string{NeutralizeTags(question, tags), NeutralizeTags(memory, tags), placeholderChunk})
}

// placeholders are the placeholders substitute replaces, in the order of
// its values.
var placeholders = [...]string{placeholderQuestion, placeholderMemory, placeholderChunk}

// substitute replaces each placeholder in tmpl with its value, in one pass
// from left to right, as strings.NewReplacer(placeholder, value, ...).Replace
// does (no placeholder is a prefix of another, so at most one matches at a
// position), but into one string of the exact length: the replacer grows a
// buffer and copies it into the string, about three copies of a prompt
// that is mostly one chunk.
func substitute(tmpl string, values [len(placeholders)]string) string {
	// match is the placeholder at the start of s, or -1.
	match := func(s string) int {
		for i, p := range placeholders {
			if strings.HasPrefix(s, p) {
				return i
			}
		}
		return -1
	}
	n := 0
	for i := 0; i < len(tmpl); {
		j := strings.IndexByte(tmpl[i:], '{')
		if j < 0 {
			n += len(tmpl) - i
			break
		}
		n += j
		i += j
		if k := match(tmpl[i:]); k >= 0 {
			n += len(values[k])
			i += len(placeholders[k])
		} else {
			n++
			i++
		}
	}
	var b strings.Builder
	b.Grow(n)
	for i := 0; i < len(tmpl); {
		j := strings.IndexByte(tmpl[i:], '{')
		if j < 0 {
			b.WriteString(tmpl[i:])
			break
		}
		b.WriteString(tmpl[i : i+j])
		i += j
		if k := match(tmpl[i:]); k >= 0 {
			b.WriteString(values[k])
			i += len(placeholders[k])
		} else {
			b.WriteByte('{')
			i++
		}
	}
	return b.String()
}

// Neutralize is [NeutralizeTags] with the default templates' tags.
func Neutralize(text string) string { return NeutralizeTags(text, defaultTags) }
