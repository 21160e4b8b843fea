package validation

import (
	"fmt"
	"math"
)

// Stratified computes the overall figures of several questions from each
// question's decisions: stratified estimates, in which every stratum (a
// question's answered cells, or its not-found ones) counts by its
// population, not by its sample. Pooling the decisions instead is right
// only when every stratum is sampled at the same fraction; sample sizes
// set by a margin of error, or grown by an extension, differ.
//
// Every figure is a sum of strata's proportions weighted by their
// populations (recall, a ratio of two such sums). Its interval is the
// MOVER interval (method of variance estimates recovery) for a linear
// function of binomial proportions: Zou and Donner (2008, "Construction
// of confidence limits about effect measures: a general approach",
// Statistics in Medicine 27(10):1693–1702) and Zou, Huang and Zhang
// (2009, "A note on confidence interval estimation for a linear function
// of binomial proportions", Computational Statistics & Data Analysis
// 53(4):1080–1085), built here on each stratum's exact Clopper–Pearson
// interval at the same confidence:
//
//	L = θ̂ − √Σ wₕ²(p̂ₕ − lₕ)²,   U = θ̂ + √Σ wₕ²(uₕ − p̂ₕ)²
//
// A stratum sampled whole adds no width; with one stratum the interval is
// that stratum's exact one. Recall = A/(A + B), with A the weighted share
// of right answers and B that of the other cells holding an answer (wrong
// answers where the document holds one, missed answers): A and B each get
// a MOVER interval at confidence 1 − α/2, and recall's bounds are
// A_L/(A_L + B_U) and A_U/(A_U + B_L), which hold together with
// probability at least 1 − α by Bonferroni's inequality whatever the
// correlation of A and B. The coverage of these intervals is approximate,
// not guaranteed as the per-question intervals' is: TestStratifiedCovers
// measures it on unequal strata and sampling fractions.
//
// With one question the overall figures are that question's (Estimate's).
func Stratified(questions []Decisions, confidence float64) (Figures, error) {
	if err := checkConfidence(confidence); err != nil {
		return Figures{}, err
	}
	if len(questions) == 0 {
		return Figures{}, fmt.Errorf("no question to estimate")
	}
	if len(questions) == 1 {
		return Estimate(questions[0], confidence)
	}
	var na, nf int
	for i, d := range questions {
		if err := d.check(); err != nil {
			return Figures{}, fmt.Errorf("question %d: %w", i+1, err)
		}
		na += d.Answered
		nf += d.NotFound
	}
	alpha := 1 - confidence
	total := float64(na + nf)
	f := Figures{Confidence: confidence}
	var precision, elusion, richness, right, other []term
	var held int
	for _, d := range questions {
		wa, wf := float64(d.Answered), float64(d.NotFound)
		held += d.Right + d.WrongHeld + d.Missed
		if d.Answered > 0 {
			p, err := proportion(d.Right, d.AnsweredSampled, d.Answered, confidence)
			if err != nil {
				return Figures{}, err
			}
			h, err := proportion(d.Right+d.WrongHeld, d.AnsweredSampled, d.Answered, confidence)
			if err != nil {
				return Figures{}, err
			}
			r2, err := proportion(d.Right, d.AnsweredSampled, d.Answered, 1-alpha/2)
			if err != nil {
				return Figures{}, err
			}
			w2, err := proportion(d.WrongHeld, d.AnsweredSampled, d.Answered, 1-alpha/2)
			if err != nil {
				return Figures{}, err
			}
			precision = append(precision, term{wa / float64(na), p})
			richness = append(richness, term{wa / total, h})
			right = append(right, term{wa / total, r2})
			other = append(other, term{wa / total, w2})
		}
		if d.NotFound > 0 {
			e, err := proportion(d.Missed, d.NotFoundSampled, d.NotFound, confidence)
			if err != nil {
				return Figures{}, err
			}
			e2, err := proportion(d.Missed, d.NotFoundSampled, d.NotFound, 1-alpha/2)
			if err != nil {
				return Figures{}, err
			}
			elusion = append(elusion, term{wf / float64(nf), e})
			richness = append(richness, term{wf / total, e})
			other = append(other, term{wf / total, e2})
		}
	}
	f.Precision, f.Elusion, f.Richness = mover(precision), mover(elusion), mover(richness)
	if held > 0 {
		a, b := mover(right), mover(other)
		f.RecallDefined = true
		f.Recall = Interval{
			Estimate: zeroIfNaN(a.Estimate / (a.Estimate + b.Estimate)),
			Lower:    zeroIfNaN(a.Lower / (a.Lower + b.Upper)),
			Upper:    oneIfNaN(a.Upper / (a.Upper + b.Lower)),
		}
	}
	return f, nil
}

// term is one stratum's proportion with its interval, and its weight in
// a figure.
type term struct {
	weight float64
	iv     Interval
}

// mover is the MOVER interval of Σ weight·proportion (see Stratified),
// within [0, Σ weight]; no terms give the zero interval.
func mover(terms []term) Interval {
	var est, lo2, hi2, sum float64
	for _, t := range terms {
		est += t.weight * t.iv.Estimate
		lo2 += math.Pow(t.weight*(t.iv.Estimate-t.iv.Lower), 2)
		hi2 += math.Pow(t.weight*(t.iv.Upper-t.iv.Estimate), 2)
		sum += t.weight
	}
	return Interval{Estimate: est, Lower: max(0, est-math.Sqrt(lo2)), Upper: min(sum, est+math.Sqrt(hi2))}
}
