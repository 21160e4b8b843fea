package validation

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/memagent/memagent/internal/testdeps"
)

// rTable is the table of Clopper–Pearson intervals that R's binom.test
// computed (testdata/clopper_pearson.R writes it).
const rTable = "testdata/clopper_pearson.tsv"

// cpTolerance is how far ClopperPearson's bounds may be from R's (the
// largest difference on the table is about 1.3e-14): the bisection stops
// at 2⁻⁶⁴ of the unit interval and the binomial tails are summed in log
// space, where R inverts the beta distribution (qbeta). Both are far
// below anything a report prints (0.1%).
const cpTolerance = 1e-12

type cpCase struct {
	x, n         int
	confidence   float64
	lower, upper float64
}

func parseCPTable(t *testing.T, data []byte) []cpCase {
	t.Helper()
	var out []cpCase
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		f := strings.Split(sc.Text(), "\t")
		if line == 1 {
			if sc.Text() != "x\tn\tconfidence\tlower\tupper" {
				t.Fatalf("table header %q", sc.Text())
			}
			continue
		}
		if len(f) != 5 {
			t.Fatalf("table line %d: %q has %d fields, want 5", line, sc.Text(), len(f))
		}
		var c cpCase
		var err error
		if c.x, err = strconv.Atoi(f[0]); err == nil {
			if c.n, err = strconv.Atoi(f[1]); err == nil {
				if c.confidence, err = strconv.ParseFloat(f[2], 64); err == nil {
					if c.lower, err = strconv.ParseFloat(f[3], 64); err == nil {
						c.upper, err = strconv.ParseFloat(f[4], 64)
					}
				}
			}
		}
		if err != nil {
			t.Fatalf("table line %d: %v", line, err)
		}
		out = append(out, c)
	}
	return out
}

// TestClopperPearsonMatchesR: ClopperPearson's intervals equal R's
// binom.test's, an independent implementation (it inverts the beta
// distribution, where ClopperPearson bisects on binomial tails), on the
// stored table: 136 cases at 80, 90, 95 and 99% with 0 of n, n of n,
// n = 1 and n up to 10,000.
func TestClopperPearsonMatchesR(t *testing.T) {
	data, err := os.ReadFile(rTable)
	if err != nil {
		t.Fatal(err)
	}
	cases := parseCPTable(t, data)
	if len(cases) < 50 {
		t.Fatalf("the table holds %d cases, want at least 50", len(cases))
	}
	var edges struct{ none, all, one int }
	worst := 0.0
	for _, c := range cases {
		name := fmt.Sprintf("%d_of_%d_at_%.2f", c.x, c.n, c.confidence)
		iv, err := ClopperPearson(c.x, c.n, c.confidence)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		d := math.Max(math.Abs(iv.Lower-c.lower), math.Abs(iv.Upper-c.upper))
		worst = math.Max(worst, d)
		if d > cpTolerance {
			t.Errorf("%s: [%.12f, %.12f], R gives [%.12f, %.12f]", name, iv.Lower, iv.Upper, c.lower, c.upper)
		}
		switch {
		case c.n == 1:
			edges.one++
		case c.x == 0:
			edges.none++
		case c.x == c.n:
			edges.all++
		}
	}
	if edges.none == 0 || edges.all == 0 || edges.one == 0 {
		t.Errorf("the table lacks an edge case: %d of 0 of n, %d of n of n, %d of n = 1", edges.none, edges.all, edges.one)
	}
	t.Logf("%d cases; the largest difference from R is %.3g", len(cases), worst)
}

// TestClopperPearsonTableIsR runs the script that wrote the stored table
// with R again and compares: the table is R's, not typed in. It needs
// Rscript (r-base-core); without it the test skips, and fails under
// MEMAGENT_CI=1.
func TestClopperPearsonTableIsR(t *testing.T) {
	rscript := testdeps.Command(t, "Rscript", "apt-get install r-base-core")
	out, err := exec.Command(rscript, "--vanilla", "testdata/clopper_pearson.R").Output()
	if err != nil {
		t.Fatalf("Rscript --vanilla testdata/clopper_pearson.R: %v", err)
	}
	stored, err := os.ReadFile(rTable)
	if err != nil {
		t.Fatal(err)
	}
	got, want := parseCPTable(t, out), parseCPTable(t, stored)
	if len(got) != len(want) {
		t.Fatalf("R wrote %d cases, the stored table holds %d: regenerate it (see testdata/clopper_pearson.R)", len(got), len(want))
	}
	// Another R build or libm may differ in the last bits.
	for i := range got {
		g, w := got[i], want[i]
		if g.x != w.x || g.n != w.n || g.confidence != w.confidence ||
			math.Abs(g.lower-w.lower) > 1e-12 || math.Abs(g.upper-w.upper) > 1e-12 {
			t.Errorf("case %d: R gives %+v, the stored table %+v: regenerate it (see testdata/clopper_pearson.R)", i+1, g, w)
		}
	}
}
