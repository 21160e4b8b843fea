package validation

import "github.com/memagent/memagent/api"

// Judge compares threshold t with its figure's interval among a
// validation's figures, overall or of t's question: ">=" with the
// interval's lower bound, "<=" with its upper one. A figure that cannot
// be judged (no such question, figures not computed, recall undefined)
// fails, saying why. The validation workflow judges its own thresholds
// with it, and a batch's gate its thresholds on the same figures.
func Judge(t api.ValidationThreshold, overall api.ValidationFigures, questions []api.ValidationFigures) api.ValidationOutcome {
	o := api.ValidationOutcome{Threshold: t}
	f := &overall
	if t.Question != "" {
		f = nil
		for i := range questions {
			if questions[i].Question == t.Question {
				f = &questions[i]
			}
		}
	}
	switch {
	case f == nil:
		o.Why = "no such question in the batch"
		return o
	case f.Error != "":
		o.Why = f.Error
		return o
	case t.Figure == api.FigureRecall && !f.RecallDefined:
		o.Why = "recall is undefined: the sample found no cell that holds an answer"
		return o
	}
	i := map[string]api.ValidationInterval{
		api.FigurePrecision: f.Precision, api.FigureElusion: f.Elusion, api.FigureRichness: f.Richness, api.FigureRecall: f.Recall,
	}[t.Figure]
	if t.Op == ">=" {
		o.Bound, o.Passed = i.Lower, i.Lower >= t.Value
	} else {
		o.Bound, o.Passed = i.Upper, i.Upper <= t.Value
	}
	return o
}
