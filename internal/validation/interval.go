package validation

import (
	"fmt"
	"math"
)

// Interval is a proportion's point estimate with the bounds of its
// confidence interval, all in [0, 1].
type Interval struct {
	Estimate float64 `json:"estimate"`
	Lower    float64 `json:"lower"`
	Upper    float64 `json:"upper"`
}

// checkConfidence refuses a confidence level outside (0, 1).
func checkConfidence(confidence float64) error {
	if !(confidence > 0 && confidence < 1) {
		return fmt.Errorf("confidence %v is not a level between 0 and 1 (for 95%% give 0.95)", confidence)
	}
	return nil
}

// ClopperPearson is the exact two-sided interval of Clopper and Pearson
// (1934, Biometrika 26(4):404–413) for x successes in n trials: the lower
// bound is the p at which P(X ≥ x) = α/2, the upper bound the p at which
// P(X ≤ x) = α/2, for X ~ Binomial(n, p) and α = 1 − confidence. Its
// coverage is at least the confidence level for every p, which is why it is
// the interval a validation can defend; it is wider than the normal
// approximation, most of all near 0 and 1 where validations live.
func ClopperPearson(x, n int, confidence float64) (Interval, error) {
	if err := checkConfidence(confidence); err != nil {
		return Interval{}, err
	}
	if n <= 0 || x < 0 || x > n {
		return Interval{}, fmt.Errorf("%d successes in %d trials: want 0 ≤ successes ≤ trials and trials > 0", x, n)
	}
	alpha := 1 - confidence
	iv := Interval{Estimate: float64(x) / float64(n), Lower: 0, Upper: 1}
	if x > 0 {
		// P(X ≥ x) grows with p.
		iv.Lower = bisect(func(p float64) bool { return binomialTail(x, n, n, p) < alpha/2 })
	}
	if x < n {
		// P(X ≤ x) falls as p grows.
		iv.Upper = bisect(func(p float64) bool { return binomialTail(0, x, n, p) > alpha/2 })
	}
	return iv, nil
}

// bisect returns the p in [0, 1] where below turns from true to false.
func bisect(below func(p float64) bool) float64 {
	lo, hi := 0.0, 1.0
	for range 64 {
		mid := (lo + hi) / 2
		if below(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// binomialTail is P(from ≤ X ≤ to) for X ~ Binomial(n, p), summed in log
// space so that large n neither overflows nor loses the small terms.
func binomialTail(from, to, n int, p float64) float64 {
	switch {
	case p <= 0:
		if from == 0 {
			return 1
		}
		return 0
	case p >= 1:
		if to == n {
			return 1
		}
		return 0
	}
	// The first term by log-gamma, each next by the ratio of neighbours,
	// C(n, k+1)/C(n, k) = (n−k)/(k+1), in linear space relative to the
	// first term, rescaled before it could overflow: no log or exp a term.
	lgN, _ := math.Lgamma(float64(n + 1))
	lgK, _ := math.Lgamma(float64(from + 1))
	lgNK, _ := math.Lgamma(float64(n - from + 1))
	logFirst := lgN - lgK - lgNK + float64(from)*math.Log(p) + float64(n-from)*math.Log1p(-p)
	odds := p / (1 - p)
	const big, logBig = 1e250, 575.6462732485114 // ln(1e250)
	sum, term, scale := 0.0, 1.0, 0.0
	for k := from; k <= to; k++ {
		sum += term
		if term > big || sum > big {
			sum, term, scale = sum/big, term/big, scale+logBig
		}
		term *= float64(n-k) / float64(k+1) * odds
	}
	return math.Min(1, math.Exp(logFirst+scale)*sum)
}

// NormalQuantile is the standard normal distribution's quantile: the z with
// P(Z ≤ z) = q (1.959964 for 0.975).
func NormalQuantile(q float64) float64 {
	return math.Sqrt2 * math.Erfinv(2*q-1)
}
