package validation

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestOptionalStopping measures what looking at the intervals and
// stopping once they are within the margin does to their coverage: a
// stratum of 5,000 cells of known precision is sampled for ±10% at 95%,
// and, while precision's half-width exceeds ±5%, extended (the next cells
// of the same draw) to the sizes for ±8%, ±6% and ±5%, stopping at the
// first look within ±5% or at the last. Coverage at the stop is logged
// beside the fixed-size sample's (docs/VALIDATION.md quotes both), and
// must stay at least 93%: the stopping rule looks at the width, which
// depends on the estimate only through p̂(1 − p̂), and Clopper–Pearson's
// slack absorbs it.
func TestOptionalStopping(t *testing.T) {
	const population, trials = 5000, 2000
	var sizes []int
	for _, m := range []float64{0.1, 0.08, 0.06, 0.05} {
		n, err := SampleSize(population, m, 0.95)
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, n)
	}
	for _, p := range []float64{0.5, 0.8, 0.9, 0.95} {
		t.Run(fmt.Sprint("precision_", p), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(p*1000), 5))
			right := int(p * population)
			cells := cellsOf(population, right, 0)
			var coveredStop, coveredFixed, looks int
			for range trials {
				// One draw, nested: the first n cells of a shuffle are the
				// sample of n, as an extension takes them.
				x, drawn := 0, 0
				take := func(n int) {
					for ; drawn < n; drawn++ {
						j := drawn + rng.IntN(population-drawn)
						cells[drawn], cells[j] = cells[j], cells[drawn]
						if cells[drawn] == 0 {
							x++
						}
					}
				}
				var stopped *Interval
				for i, n := range sizes {
					take(n)
					iv, err := ClopperPearson(x, n, 0.95)
					if err != nil {
						t.Fatal(err)
					}
					if i == 0 {
						// The fixed plan: ±10%'s sample, whatever it shows.
						if iv.Lower <= p && p <= iv.Upper {
							coveredFixed++
						}
					}
					if stopped == nil && ((iv.Upper-iv.Lower)/2 <= 0.05 || i == len(sizes)-1) {
						stopped = &iv
						looks += i + 1
					}
				}
				if stopped.Lower <= p && p <= stopped.Upper {
					coveredStop++
				}
			}
			t.Logf("precision %.2f: covered %.1f%% stopping at the first look within ±5%% (%.2f looks on average), %.1f%% with the fixed sample of %d",
				p, 100*float64(coveredStop)/trials, float64(looks)/trials, 100*float64(coveredFixed)/trials, sizes[0])
			if coveredStop < trials*93/100 {
				t.Errorf("stopping on the width: covered %d of %d, want at least 93%%", coveredStop, trials)
			}
		})
	}
}

// TestStoppingOnAThreshold measures the worse kind of optional stopping:
// extending until a threshold passes. With the true precision exactly at
// the threshold (precision>=0.8 when it is 0.8), every pass is a false
// one; one look passes with probability at most α/2 = 2.5%, and four
// looks at most four times that (Bonferroni). The rate is logged
// (docs/VALIDATION.md quotes it).
func TestStoppingOnAThreshold(t *testing.T) {
	const population, trials, p = 5000, 4000, 0.8
	var sizes []int
	for _, m := range []float64{0.1, 0.08, 0.06, 0.05} {
		n, _ := SampleSize(population, m, 0.95)
		sizes = append(sizes, n)
	}
	rng := rand.New(rand.NewPCG(80, 5))
	cells := cellsOf(population, int(p*population), 0)
	var passedFirst, passedAny int
	for range trials {
		x, drawn := 0, 0
		passed := false
		for i, n := range sizes {
			for ; drawn < n; drawn++ {
				j := drawn + rng.IntN(population-drawn)
				cells[drawn], cells[j] = cells[j], cells[drawn]
				if cells[drawn] == 0 {
					x++
				}
			}
			iv, err := ClopperPearson(x, n, 0.95)
			if err != nil {
				t.Fatal(err)
			}
			if iv.Lower >= p {
				passed = true
				if i == 0 {
					passedFirst++
				}
			}
		}
		if passed {
			passedAny++
		}
	}
	t.Logf("precision>=%.1f with the truth at %.1f: passed falsely in %.2f%% at one look (n = %d), %.2f%% extending until it passes (up to %d looks, n ≤ %d)",
		p, p, 100*float64(passedFirst)/trials, sizes[0], 100*float64(passedAny)/trials, len(sizes), sizes[len(sizes)-1])
	if passedAny > trials*4*25/1000 {
		t.Errorf("false passes %d of %d, over Bonferroni's bound of 4 × 2.5%%", passedAny, trials)
	}
}
