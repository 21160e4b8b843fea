package validation

import (
	"fmt"
	"math"
)

// SampleSize is the number of cells a stratum of population cells needs
// for a proportion to be known within ±margin at the confidence level: the
// normal approximation's n₀ = z²·p(1−p)/margin² at the worst case p = ½,
// with the finite population correction n = n₀ / (1 + (n₀ − 1)/N), rounded
// up and never more than the population. It is the size review teams know
// from their tools (385 for ±5% at 95% of a large population, 278 of
// 1,000); the figures reported afterwards use the exact interval, which at
// that size is a little wider than ±margin near ½ and narrower near 0 or 1.
func SampleSize(population int, margin, confidence float64) (int, error) {
	if err := checkConfidence(confidence); err != nil {
		return 0, err
	}
	if !(margin > 0 && margin < 0.5) {
		return 0, fmt.Errorf("margin of error %v is not between 0 and 0.5 (for ±5%% give 0.05)", margin)
	}
	if population < 0 {
		return 0, fmt.Errorf("population %d is negative", population)
	}
	if population == 0 {
		return 0, nil
	}
	z := NormalQuantile(1 - (1-confidence)/2)
	n0 := z * z * 0.25 / (margin * margin)
	n := n0 / (1 + (n0-1)/float64(population))
	// A hair of slack keeps a size that is a whole number in exact
	// arithmetic from rounding up to the next one.
	size := int(math.Ceil(n - 1e-9))
	return min(max(size, 1), population), nil
}
