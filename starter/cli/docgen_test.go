package cli

import "github.com/memagent/memagent/internal/dev/docgen"

// The generated document's planted fact, question and answer, which the
// end-to-end tests ask about (devstack's demo asks it too).
const (
	demoQuestion = docgen.Question
	demoAnswer   = docgen.Answer
)
