package validation

import (
	"math"
	"math/rand/v2"
	"testing"
)

// simStratum is one question's population with known truth: of its
// answered cells, right are right and wrongHeld wrong with an answer in
// the document; of its not-found cells, missed hold an answer.
type simQuestion struct {
	answered, right, wrongHeld int
	notFound, missed           int
}

// simDraw takes k of the stratum's cells without replacement (a partial
// Fisher–Yates shuffle of cells, which it reorders) and counts each
// kind among them.
func simDraw(rng *rand.Rand, cells []int, k int) (counts [3]int) {
	for i := range k {
		j := i + rng.IntN(len(cells)-i)
		cells[i], cells[j] = cells[j], cells[i]
		counts[cells[i]]++
	}
	return counts
}

// cellsOf lists a stratum of n cells: first a of kind 0, then b of kind 1,
// the rest kind 2.
func cellsOf(n, a, b int) []int {
	c := make([]int, n)
	for i := range c {
		switch {
		case i < a:
			c[i] = 0
		case i < a+b:
			c[i] = 1
		default:
			c[i] = 2
		}
	}
	return c
}

type coverage struct{ precision, elusion, richness, recall, trials int }

// simulate runs trials validations of the questions, each stratum sampled
// without replacement at size(population), and counts how often the
// overall intervals at 95% hold the population's true figures.
func simulate(t *testing.T, seed uint64, trials int, qs []simQuestion, size func(int) int) coverage {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 51))
	var na, nf, right, wrongHeld, missed int
	answeredCells := make([][]int, len(qs))
	notFoundCells := make([][]int, len(qs))
	for i, q := range qs {
		na, nf = na+q.answered, nf+q.notFound
		right, wrongHeld, missed = right+q.right, wrongHeld+q.wrongHeld, missed+q.missed
		answeredCells[i] = cellsOf(q.answered, q.right, q.wrongHeld)
		notFoundCells[i] = cellsOf(q.notFound, 0, q.missed) // kind 1: missed
	}
	truth := struct{ precision, elusion, richness, recall float64 }{
		float64(right) / float64(na), float64(missed) / float64(nf),
		float64(right+wrongHeld+missed) / float64(na+nf), float64(right) / float64(right+wrongHeld+missed),
	}
	in := func(iv Interval, v float64) bool { return iv.Lower-1e-12 <= v && v <= iv.Upper+1e-12 }
	var c coverage
	for range trials {
		ds := make([]Decisions, len(qs))
		for i, q := range qs {
			d := Decisions{Answered: q.answered, NotFound: q.notFound, AnsweredSampled: size(q.answered), NotFoundSampled: size(q.notFound)}
			a := simDraw(rng, answeredCells[i], d.AnsweredSampled)
			d.Right, d.WrongHeld = a[0], a[1]
			d.Missed = simDraw(rng, notFoundCells[i], d.NotFoundSampled)[1]
			ds[i] = d
		}
		f, err := Stratified(ds, 0.95)
		if err != nil {
			t.Fatal(err)
		}
		for _, iv := range []Interval{f.Precision, f.Elusion, f.Richness, f.Recall} {
			if !(iv.Lower <= iv.Estimate && iv.Estimate <= iv.Upper) {
				t.Fatalf("figures %+v: an estimate outside its interval", f)
			}
		}
		c.trials++
		if in(f.Precision, truth.precision) {
			c.precision++
		}
		if in(f.Elusion, truth.elusion) {
			c.elusion++
		}
		if in(f.Richness, truth.richness) {
			c.richness++
		}
		if f.RecallDefined && in(f.Recall, truth.recall) {
			c.recall++
		}
	}
	return c
}

// TestStratifiedCovers: 1,000 simulated validations of each of three
// batches whose questions have strata of very unequal sizes, sampled at
// unequal fractions (sized for a margin, which samples a small stratum
// nearly whole and a large one thinly; a fixed sample a stratum; one
// stratum taken whole), with populations of known precision, elusion,
// richness and recall drawn without replacement as a validation draws:
// the overall 95% intervals hold the true figure in at least 93% of
// them (the figures are logged; docs/VALIDATION.md quotes them).
func TestStratifiedCovers(t *testing.T) {
	qs := []simQuestion{
		{answered: 3000, right: 2700, wrongHeld: 120, notFound: 500, missed: 30},
		{answered: 200, right: 140, wrongHeld: 20, notFound: 2500, missed: 50},
		{answered: 60, right: 57, wrongHeld: 2, notFound: 40, missed: 8},
		{answered: 800, right: 640, wrongHeld: 40, notFound: 9000, missed: 90},
	}
	margin := func(m float64) func(int) int {
		return func(n int) int {
			k, err := SampleSize(n, m, 0.95)
			if err != nil {
				t.Fatal(err)
			}
			return k
		}
	}
	for _, sc := range []struct {
		name string
		qs   []simQuestion
		size func(int) int
	}{
		{"margin_0.1", qs, margin(0.1)},
		{"margin_0.05", qs, margin(0.05)},
		{"sample_40_one_whole", qs, func(n int) int { return min(n, 40) }},
	} {
		t.Run(sc.name, func(t *testing.T) {
			c := simulate(t, 93, 1000, sc.qs, sc.size)
			t.Logf("covered of %d: precision %d, elusion %d, richness %d, recall %d", c.trials, c.precision, c.elusion, c.richness, c.recall)
			for name, k := range map[string]int{"precision": c.precision, "elusion": c.elusion, "richness": c.richness, "recall": c.recall} {
				if k < 930 {
					t.Errorf("%s: the interval held the truth in %d of %d validations, want at least 93%%", name, k, c.trials)
				}
			}
		})
	}
}

// With one question the overall figures are the question's; with a
// stratum sampled whole it adds nothing to the width; pooling would
// mis-weight unequal fractions, which the stratified estimate does not.
func TestStratifiedEdges(t *testing.T) {
	d := Decisions{Answered: 50, NotFound: 80, AnsweredSampled: 20, Right: 15, WrongHeld: 2, NotFoundSampled: 30, Missed: 3}
	one, err := Stratified([]Decisions{d}, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := Estimate(d, 0.95); one != want {
		t.Errorf("one question: %+v, want Estimate's %+v", one, want)
	}
	// Two questions, the second's answered stratum taken whole, all
	// right: precision's interval is the first stratum's, scaled.
	census := Decisions{Answered: 50, NotFound: 10, AnsweredSampled: 50, Right: 50, NotFoundSampled: 10}
	f, err := Stratified([]Decisions{d, census}, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	cp, _ := ClopperPearson(15, 20, 0.95)
	if !near(f.Precision.Estimate, (50*0.75+50)/100, 1e-12) || !near(f.Precision.Lower, (50*cp.Lower+50)/100, 1e-12) || !near(f.Precision.Upper, (50*cp.Upper+50)/100, 1e-12) {
		t.Errorf("precision %+v, want the sampled stratum's exact interval weighted with the whole one", f.Precision)
	}
	// Unequal fractions: 1,000 answered cells, 10 sampled, all wrong;
	// 10 answered cells, all sampled, all right. Pooled precision would
	// be 50%; the population's is near 1%.
	f, err = Stratified([]Decisions{
		{Answered: 1000, AnsweredSampled: 10},
		{Answered: 10, AnsweredSampled: 10, Right: 10},
	}, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	if !near(f.Precision.Estimate, 10.0/1010, 1e-12) {
		t.Errorf("precision %v, want %v (each stratum by its population)", f.Precision.Estimate, 10.0/1010)
	}
	if _, err := Stratified([]Decisions{d, {Answered: 5}}, 0.95); err == nil {
		t.Error("a question with no decision gave overall figures")
	}
	if _, err := Stratified(nil, 0.95); err == nil {
		t.Error("no question gave figures")
	}
	if math.IsNaN(f.Recall.Lower) || math.IsNaN(f.Recall.Upper) {
		t.Errorf("recall %+v", f.Recall)
	}
}
