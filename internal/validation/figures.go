package validation

import (
	"fmt"
	"math"
)

// Decisions are the blind decisions on one question's sample (or all
// questions' pooled), beside the sizes of the strata they were drawn from.
// A cell is one document asked one question; the model either answered it
// or found no answer.
type Decisions struct {
	// Answered and NotFound are the strata's sizes in the population.
	Answered int `json:"answered"`
	NotFound int `json:"not_found"`
	// AnsweredSampled answered cells were decided: Right of them right,
	// WrongHeld wrong although the document holds an answer (a miss as
	// well as a wrong answer), the rest wrong with no answer in the
	// document.
	AnsweredSampled int `json:"answered_sampled"`
	Right           int `json:"right"`
	WrongHeld       int `json:"wrong_held"`
	// NotFoundSampled not-found cells were decided: Missed of them hold an
	// answer the model did not find.
	NotFoundSampled int `json:"not_found_sampled"`
	Missed          int `json:"missed"`
}

// Figures are what a validation reports of a population, each with its
// interval at Confidence.
type Figures struct {
	Confidence float64 `json:"confidence"`
	// Precision is the share of answered cells whose answer is right.
	Precision Interval `json:"precision"`
	// Elusion is the share of not-found cells whose document holds an
	// answer.
	Elusion Interval `json:"elusion"`
	// Richness is the share of all cells whose document holds an answer.
	Richness Interval `json:"richness"`
	// Recall is the share of cells holding an answer that were answered
	// right; RecallDefined is false when the sample found no cell that
	// holds one (recall then has no meaning, and Recall is zero).
	Recall        Interval `json:"recall"`
	RecallDefined bool     `json:"recall_defined"`
}

func (d Decisions) check() error {
	switch {
	case d.Answered < 0 || d.NotFound < 0:
		return fmt.Errorf("strata of %d answered and %d not found: sizes are not negative", d.Answered, d.NotFound)
	case d.AnsweredSampled < 0 || d.AnsweredSampled > d.Answered:
		return fmt.Errorf("%d answered cells decided of %d", d.AnsweredSampled, d.Answered)
	case d.NotFoundSampled < 0 || d.NotFoundSampled > d.NotFound:
		return fmt.Errorf("%d not-found cells decided of %d", d.NotFoundSampled, d.NotFound)
	case d.Answered > 0 && d.AnsweredSampled == 0:
		return fmt.Errorf("no answered cell of %d was decided: the answered stratum cannot be estimated", d.Answered)
	case d.NotFound > 0 && d.NotFoundSampled == 0:
		return fmt.Errorf("no not-found cell of %d was decided: the not-found stratum cannot be estimated", d.NotFound)
	case d.Right < 0 || d.WrongHeld < 0 || d.Right+d.WrongHeld > d.AnsweredSampled:
		return fmt.Errorf("%d right and %d wrong-but-held of %d answered cells decided", d.Right, d.WrongHeld, d.AnsweredSampled)
	case d.Missed < 0 || d.Missed > d.NotFoundSampled:
		return fmt.Errorf("%d missed of %d not-found cells decided", d.Missed, d.NotFoundSampled)
	}
	return nil
}

// proportion is x of a stratum's n sampled cells with its exact interval:
// Clopper–Pearson when the sample is part of the stratum, the proportion
// itself when the sample is the whole stratum (nothing is estimated), and
// zero for an empty stratum (no cell to be wrong about).
func proportion(x, n, stratum int, confidence float64) (Interval, error) {
	switch {
	case stratum == 0:
		return Interval{}, nil
	case n == stratum:
		p := float64(x) / float64(n)
		return Interval{p, p, p}, nil
	}
	return ClopperPearson(x, n, confidence)
}

// Estimate computes the figures of a validation from its decisions.
//
// Precision and elusion are exact Clopper–Pearson intervals at the chosen
// confidence. Richness and recall combine several strata's proportions;
// their intervals are the conservative combination of exact intervals by
// Bonferroni's inequality: each of the k proportions a figure depends on is
// bounded at confidence 1 − α/k, and the figure's bounds are its values at
// the bounds' least and most favourable corner. Since recall rises with
// the right answers' share and falls with the misses' shares, all k
// intervals hold together with probability at least 1 − α, and then the
// figure lies between its bounds: the interval's coverage is at least the
// confidence level. It is wider than the approximate intervals that Webber
// compares (2013, "Approximate recall confidence intervals", ACM TOIS
// 31(1)), and follows the same idea as Losey's ei-Recall (2015), which
// bounds the misses by the elusion sample's exact interval, extended here
// with the answered stratum's own uncertainty, since memagent's answers are
// sampled, not all verified.
func Estimate(d Decisions, confidence float64) (Figures, error) {
	if err := checkConfidence(confidence); err != nil {
		return Figures{}, err
	}
	if err := d.check(); err != nil {
		return Figures{}, err
	}
	f := Figures{Confidence: confidence}
	var err error
	if f.Precision, err = proportion(d.Right, d.AnsweredSampled, d.Answered, confidence); err != nil {
		return Figures{}, err
	}
	if f.Elusion, err = proportion(d.Missed, d.NotFoundSampled, d.NotFound, confidence); err != nil {
		return Figures{}, err
	}
	alpha := 1 - confidence
	na, nf := float64(d.Answered), float64(d.NotFound)

	// Richness: the held share of each stratum, two proportions.
	held2, err := proportion(d.Right+d.WrongHeld, d.AnsweredSampled, d.Answered, 1-alpha/2)
	if err != nil {
		return Figures{}, err
	}
	elusion2, err := proportion(d.Missed, d.NotFoundSampled, d.NotFound, 1-alpha/2)
	if err != nil {
		return Figures{}, err
	}
	if total := na + nf; total > 0 {
		held := 0.0
		if d.AnsweredSampled > 0 {
			held = float64(d.Right+d.WrongHeld) / float64(d.AnsweredSampled)
		}
		f.Richness = Interval{
			Estimate: (na*held + nf*f.Elusion.Estimate) / total,
			Lower:    (na*held2.Lower + nf*elusion2.Lower) / total,
			Upper:    (na*held2.Upper + nf*elusion2.Upper) / total,
		}
	}

	// Recall: right answers over the cells that hold an answer, three
	// proportions (right, wrong-but-held, missed).
	right3, err := proportion(d.Right, d.AnsweredSampled, d.Answered, 1-alpha/3)
	if err != nil {
		return Figures{}, err
	}
	wrong3, err := proportion(d.WrongHeld, d.AnsweredSampled, d.Answered, 1-alpha/3)
	if err != nil {
		return Figures{}, err
	}
	missed3, err := proportion(d.Missed, d.NotFoundSampled, d.NotFound, 1-alpha/3)
	if err != nil {
		return Figures{}, err
	}
	wrong := 0.0
	if d.AnsweredSampled > 0 {
		wrong = float64(d.WrongHeld) / float64(d.AnsweredSampled)
	}
	recall := func(r, w, m float64) float64 {
		if den := na*r + na*w + nf*m; den > 0 {
			return na * r / den
		}
		return math.NaN()
	}
	if d.Right+d.WrongHeld+d.Missed > 0 {
		f.RecallDefined = true
		f.Recall = Interval{
			Estimate: recall(f.Precision.Estimate, wrong, f.Elusion.Estimate),
			Lower:    zeroIfNaN(recall(right3.Lower, wrong3.Upper, missed3.Upper)),
			Upper:    oneIfNaN(recall(right3.Upper, wrong3.Lower, missed3.Lower)),
		}
	}
	return f, nil
}

func zeroIfNaN(x float64) float64 {
	if math.IsNaN(x) {
		return 0
	}
	return x
}

func oneIfNaN(x float64) float64 {
	if math.IsNaN(x) {
		return 1
	}
	return x
}
