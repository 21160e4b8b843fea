package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/memagent/memagent/api"
)

// validationGateFlags binds the flags of a batch's validation gate
// (api.ValidationGate), named after `starter validate`'s with a
// --validate- prefix, on `schedule create` and `batch`. The function it
// returns is the gate asked for, nil without --require-validation.
func validationGateFlags(fs *pflag.FlagSet) func() (*api.ValidationGate, error) {
	require := fs.Bool("require-validation", false, "write each report provisional until a validation of the batch passes: the batch starts it (memagent.Validate, <batch id>.validate) as it completes, and its sample waits for reviewers (docs/VALIDATION.md)")
	confidence := fs.Float64("validate-confidence", 0, "with --require-validation: the confidence level of the validation's intervals (default 0.95); a validation at a lower one does not pass the gate")
	margin := fs.Float64("validate-margin", 0, "with --require-validation: the margin of error each stratum's sample is sized for (default 0.1)")
	sample := fs.Int("validate-sample", 0, "with --require-validation: the number of cells to sample in each stratum, instead of --validate-margin")
	thresholds := fs.StringArray("validate-threshold", nil, "with --require-validation: a pass mark of the gate, FIGURE>=VALUE (the interval's lower bound) or FIGURE<=VALUE (its upper bound), e.g. 'recall>=0.75'; repeat it for more")
	return func() (*api.ValidationGate, error) {
		if !*require {
			for _, name := range []string{"validate-confidence", "validate-margin", "validate-sample", "validate-threshold"} {
				if fs.Changed(name) {
					return nil, fmt.Errorf("--%s without --require-validation: add --require-validation, or drop it", name)
				}
			}
			return nil, nil
		}
		g := &api.ValidationGate{Confidence: *confidence, Margin: *margin, SampleSize: *sample}
		for _, s := range *thresholds {
			t, err := api.ParseValidationThreshold(s)
			if err != nil {
				return nil, fmt.Errorf("--validate-threshold: %w", err)
			}
			g.Thresholds = append(g.Thresholds, t)
		}
		if err := g.Validate(); err != nil {
			r := strings.NewReplacer("sample_size", "--validate-sample", "margin", "--validate-margin", "confidence", "--validate-confidence")
			return nil, errors.New(r.Replace(err.Error()))
		}
		return g, nil
	}
}

// gateText is a gate as describe shows it.
func gateText(g api.ValidationGate) string {
	g = g.WithDefaults()
	parts := []string{fmt.Sprintf("confidence %g", g.Confidence)}
	if g.SampleSize > 0 {
		parts = append(parts, fmt.Sprintf("sample %d a stratum", g.SampleSize))
	} else {
		parts = append(parts, fmt.Sprintf("margin ±%g", g.Margin))
	}
	for _, t := range g.Thresholds {
		parts = append(parts, t.String())
	}
	return "required (" + strings.Join(parts, ", ") + ")"
}
