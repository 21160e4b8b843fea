package validation

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func near(got, want, tol float64) bool { return math.Abs(got-want) <= tol }

// The exact interval agrees with published values (R's binom.test gives
// the same Clopper–Pearson bounds) and its bounds are where the binomial
// tails equal α/2.
func TestClopperPearson(t *testing.T) {
	for _, tc := range []struct {
		x, n         int
		conf         float64
		lower, upper float64
	}{
		{5, 10, 0.95, 0.1870860, 0.8129140},
		{95, 100, 0.95, 0.8871651, 0.9835681},
		{0, 10, 0.95, 0, 0.3084971},
		{10, 10, 0.95, 0.6915029, 1},
		{0, 100, 0.95, 0, 1 - math.Pow(0.025, 0.01)},
	} {
		t.Run(fmt.Sprintf("%d_of_%d", tc.x, tc.n), func(t *testing.T) {
			iv, err := ClopperPearson(tc.x, tc.n, tc.conf)
			if err != nil {
				t.Fatal(err)
			}
			if !near(iv.Lower, tc.lower, 5e-7) || !near(iv.Upper, tc.upper, 5e-7) {
				t.Errorf("interval = [%.7f, %.7f], want [%.7f, %.7f]", iv.Lower, iv.Upper, tc.lower, tc.upper)
			}
			if iv.Estimate != float64(tc.x)/float64(tc.n) {
				t.Errorf("estimate = %v, want %v", iv.Estimate, float64(tc.x)/float64(tc.n))
			}
		})
	}
	for _, tc := range []struct{ x, n int }{{1, 2000}, {1000, 2000}, {1999, 2000}, {37, 400}} {
		iv, err := ClopperPearson(tc.x, tc.n, 0.95)
		if err != nil {
			t.Fatal(err)
		}
		if got := binomialTail(tc.x, tc.n, tc.n, iv.Lower); !near(got, 0.025, 1e-9) {
			t.Errorf("%d/%d: P(X ≥ x) at the lower bound = %v, want 0.025", tc.x, tc.n, got)
		}
		if got := binomialTail(0, tc.x, tc.n, iv.Upper); !near(got, 0.025, 1e-9) {
			t.Errorf("%d/%d: P(X ≤ x) at the upper bound = %v, want 0.025", tc.x, tc.n, got)
		}
	}
	for _, bad := range []struct {
		x, n int
		conf float64
	}{{1, 0, 0.95}, {3, 2, 0.95}, {-1, 2, 0.95}, {1, 2, 95}, {1, 2, 0}} {
		if _, err := ClopperPearson(bad.x, bad.n, bad.conf); err == nil {
			t.Errorf("ClopperPearson(%d, %d, %v) gave no error", bad.x, bad.n, bad.conf)
		}
	}
}

// Sample sizes are the ones review teams find in their tools' tables.
func TestSampleSize(t *testing.T) {
	for _, tc := range []struct {
		population   int
		margin, conf float64
		want         int
	}{
		{1_000_000_000, 0.05, 0.95, 385},
		{10_000, 0.05, 0.95, 370},
		{1_000, 0.05, 0.95, 278},
		{100, 0.05, 0.95, 80},
		{1_000_000_000, 0.02, 0.95, 2401},
		{1_000_000_000, 0.05, 0.99, 664},
		{3, 0.05, 0.95, 3},
		{0, 0.05, 0.95, 0},
	} {
		got, err := SampleSize(tc.population, tc.margin, tc.conf)
		if err != nil || got != tc.want {
			t.Errorf("SampleSize(%d, %v, %v) = %d, %v, want %d", tc.population, tc.margin, tc.conf, got, err, tc.want)
		}
	}
	if _, err := SampleSize(100, 5, 0.95); err == nil {
		t.Error("a margin of 5 (meant 5%) was accepted")
	}
}

// A draw is the one the documented sha256sum recipe gives (computed with
// coreutils' sha256sum, not with this code), whatever order the population
// is listed in.
func TestDrawFollowsItsRecipe(t *testing.T) {
	const pop = "86dc03602dcf385217216784784a8ecf20e6400decc3208170b12fcb0afb6698" // printf 'a\nb\nc\nd\ne\n' | sha256sum
	for _, ids := range [][]string{{"a", "b", "c", "d", "e"}, {"e", "c", "a", "d", "b"}} {
		got, hash, err := Draw("s1", ids, 2)
		if err != nil {
			t.Fatal(err)
		}
		if hash != pop || !slices.Equal(got, []string{"d", "e"}) {
			t.Errorf("Draw(s1, %v, 2) = %v, %s, want [d e], %s", ids, got, hash, pop)
		}
	}
	for _, bad := range [][]string{{"a", "a"}, {"a", ""}, {"a\nb"}} {
		if _, _, err := Draw("s1", bad, 1); err == nil {
			t.Errorf("Draw over %q gave no error", bad)
		}
	}
	if _, _, err := Draw("", []string{"a"}, 1); err == nil {
		t.Error("an empty seed was accepted")
	}
	if _, _, err := Draw("s1", []string{"a"}, 2); err == nil {
		t.Error("a sample larger than its population was accepted")
	}
}

// Every cell is drawn about equally often over many seeds: a draw that
// favoured some cells would bias every figure.
func TestDrawIsUniform(t *testing.T) {
	ids := []string{"q1/doc-a", "q1/doc-b", "q2/doc-a", "q2/doc-b", "q3/doc-c"}
	counts := map[string]int{}
	const seeds = 5000
	for s := range seeds {
		got, _, err := Draw(fmt.Sprint("seed-", s), ids, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range got {
			counts[id]++
		}
	}
	// Each cell is in the sample with probability 2/5: 2,000 of 5,000
	// draws, standard deviation about 35; six of them bound a fluke.
	for _, id := range ids {
		if c := counts[id]; c < 2000-210 || c > 2000+210 {
			t.Errorf("cell %s drawn %d times of %d, want about 2000", id, c, seeds)
		}
	}
}

// Simulated validations of populations with known truth: the intervals
// cover the true figures at least as often as their confidence says.
func TestEstimateCoversTheTruth(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 95))
	const trials = 1000
	const answered, notFound = 4000, 6000
	const pRight, pWrongHeld, pMissed = 0.85, 0.05, 0.03
	truthRecall := answered * pRight / (answered*pRight + answered*pWrongHeld + notFound*pMissed)
	truthRichness := (answered*(pRight+pWrongHeld) + notFound*pMissed) / (answered + notFound)
	var coveredPrecision, coveredElusion, coveredRecall, coveredRichness int
	for range trials {
		d := Decisions{Answered: answered, NotFound: notFound, AnsweredSampled: 150, NotFoundSampled: 300}
		for range d.AnsweredSampled {
			switch u := rng.Float64(); {
			case u < pRight:
				d.Right++
			case u < pRight+pWrongHeld:
				d.WrongHeld++
			}
		}
		for range d.NotFoundSampled {
			if rng.Float64() < pMissed {
				d.Missed++
			}
		}
		f, err := Estimate(d, 0.95)
		if err != nil {
			t.Fatal(err)
		}
		in := func(iv Interval, v float64) bool { return iv.Lower <= v && v <= iv.Upper }
		if in(f.Precision, pRight) {
			coveredPrecision++
		}
		if in(f.Elusion, pMissed) {
			coveredElusion++
		}
		if f.RecallDefined && in(f.Recall, truthRecall) {
			coveredRecall++
		}
		if in(f.Richness, truthRichness) {
			coveredRichness++
		}
		if !(f.Recall.Lower <= f.Recall.Estimate && f.Recall.Estimate <= f.Recall.Upper) {
			t.Fatalf("recall %+v: the estimate is outside its interval", f.Recall)
		}
	}
	t.Logf("covered of %d: precision %d, elusion %d, richness %d, recall %d", trials, coveredPrecision, coveredElusion, coveredRichness, coveredRecall)
	// Sampling with replacement is simulated here (a binomial draw), the
	// case the exact intervals are built for; the bar is 93%.
	for name, c := range map[string]int{"precision": coveredPrecision, "elusion": coveredElusion, "recall": coveredRecall, "richness": coveredRichness} {
		if c < 930 {
			t.Errorf("%s: interval covered the truth in %d of %d trials, want at least 93%%", name, c, trials)
		}
	}
}

// A census is not an estimate, an empty stratum has nothing to be wrong
// about, and decisions that do not add up are refused.
func TestEstimateEdges(t *testing.T) {
	f, err := Estimate(Decisions{Answered: 10, AnsweredSampled: 10, Right: 9, WrongHeld: 1}, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	if f.Precision != (Interval{0.9, 0.9, 0.9}) || f.Elusion != (Interval{}) || !f.RecallDefined || f.Recall.Lower != 0.9 || f.Recall.Upper != 0.9 {
		t.Errorf("census figures = %+v", f)
	}
	f, err = Estimate(Decisions{NotFound: 50, NotFoundSampled: 20}, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	if f.RecallDefined {
		t.Errorf("recall defined with no cell found to hold an answer: %+v", f)
	}
	for _, d := range []Decisions{
		{Answered: 10},
		{Answered: 10, AnsweredSampled: 5, Right: 4, WrongHeld: 2},
		{NotFound: 5, NotFoundSampled: 6},
		{NotFound: 5, NotFoundSampled: 3, Missed: 4},
	} {
		if _, err := Estimate(d, 0.95); err == nil {
			t.Errorf("Estimate(%+v) gave no error", d)
		}
	}
}
