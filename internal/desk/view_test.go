package desk

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/temporal"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/docconv/docconvtest"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/signoff"
)

// TestPlainErrors: what the desk tells a reviewer carries no internal
// prefix and says what to do. The first is the message issue 52 saw.
func TestPlainErrors(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"a decision the client refuses", fmt.Errorf("starter: %w", fmt.Errorf("memagent: %w", errors.New("reason is empty: say why the answer was edited"))),
			"reason is empty: say why the answer was edited"},
		{"a refused Update", fmt.Errorf("memagent: %w", temporal.NewApplicationError("stale: cell q1 is at version 1: reload the cell", "BadInput")),
			"stale: cell q1 is at version 1: reload the cell"},
		{"a sign-off that is not memagent's", fmt.Errorf("memagent: describe x/signoff: %w", errors.New("not memagent's")),
			"describe x/signoff: not memagent's"},
		{"Temporal down", fmt.Errorf("memagent: %w", serviceerror.NewUnavailable("connection refused")),
			"Temporal is out of the desk's reach: reload the page in a moment"},
		{"a grid gone from the store", fmt.Errorf("s3: head s3://b/runs/x/grid.json: %w", s3store.ErrNotFound),
			"head s3://b/runs/x/grid.json: object not found: the run's outputs are no longer in the store; ask the operator"},
		{"Temporal slow", fmt.Errorf("memagent: query: %w", context.DeadlineExceeded), "did not answer in time: reload the page in a moment"},
		{"a gRPC status in the text", errors.New("memagent: rpc error: code = NotFound desc = workflow not found for ID: x"), "workflow not found for ID: x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := plain(tt.err)
			if !strings.Contains(got, tt.want) {
				t.Errorf("plain(%q) = %q, want it to say %q", tt.err, got, tt.want)
			}
			for _, p := range []string{"memagent:", "starter:", "s3: ", "rpc error"} {
				if strings.Contains(got, p) {
					t.Errorf("plain(%q) = %q: an internal prefix %q", tt.err, got, p)
				}
			}
		})
	}
}

// TestJSONErrorPlain: the desk's API answers a refusal in plain words.
func TestJSONErrorPlain(t *testing.T) {
	w := httptest.NewRecorder()
	jsonError(w, 409, fmt.Errorf("starter: %w", fmt.Errorf("memagent: %w", errors.New("reason is empty: say why the answer is rejected"))))
	if got, want := w.Body.String(), `{"error":"reason is empty: say why the answer is rejected"}`+"\n"; got != want {
		t.Errorf("body %s, want %s", got, want)
	}
}

// TestBodyErrors: a body the desk does not take is told in the JSON's
// words, not Go's.
func TestBodyErrors(t *testing.T) {
	for body, want := range map[string]string{
		`{"cell":"q1","level":"one"}`: `the request's body is not what the desk takes ("level" is a JSON string, not an int): reload the desk's page`,
		`{"cell":"q1","who":"bob"}`:   `the request's body is not what the desk takes (unknown field "who"): reload the desk's page`,
		`{"cell":"q1"`:                `the request's body is not what the desk takes (unexpected EOF): reload the desk's page`,
	} {
		var b decideBody
		err := decodeBody(httptest.NewRequest("POST", "/api/decide", strings.NewReader(body)), &b)
		if got := plain(err); got != want {
			t.Errorf("%s: %q, want %q", body, got, want)
		}
	}
}

// TestRowViews: the grid shows the answer that stands, the model's beside
// it, and the document by its file name.
func TestRowViews(t *testing.T) {
	const doc = "s3://memagent/documents/sha256/0123abcd/asymptote.pdf"
	at := time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC)
	edit := &api.Decision{Level: 1, Decision: api.DecisionEdited, FinalAnswer: "MetaPost", Reason: "the language it follows", Reviewer: "alice", At: at}
	g := &api.SignOffGrid{Levels: 2, Cells: []api.SignOffCell{
		{ID: "q1", Status: api.DecisionAccepted, Level1: &api.Decision{Level: 1, Decision: api.DecisionAccepted, Reviewer: "alice", At: at}},
		{ID: "q2", Status: api.DecisionEdited, Level1: edit, Level2: &api.Decision{Level: 2, Decision: api.DecisionAccepted, Reviewer: "bob", At: at}},
		{ID: "q3", Status: api.DecisionRejected, Level1: &api.Decision{Level: 1, Decision: api.DecisionRejected, Reason: "wrong", Reviewer: "alice", At: at}},
		{ID: "q4", Status: api.DecisionPending},
	}}
	rows := []signoff.Row{
		{Cell: "q1", Document: doc, ModelAnswer: "Knuth"},
		{Cell: "q2", Document: doc, ModelAnswer: "weaker syntax"},
		{Cell: "q3", Document: doc, ModelAnswer: "C++"},
		{Cell: "q4", Document: doc, ModelAnswer: "three"},
	}
	want := map[string][2]string{
		"q1": {"Knuth", api.DecisionAccepted}, "q2": {"MetaPost", api.DecisionEdited},
		"q3": {"", api.DecisionRejected}, "q4": {"", api.DecisionPending},
	}
	for _, v := range rowViews(g, rows) {
		if got := [2]string{v.FinalAnswer, v.Decided}; got != want[v.Cell] {
			t.Errorf("%s: final %q, decided %q; want %q", v.Cell, got[0], got[1], want[v.Cell])
		}
		if v.DocumentName != "asymptote.pdf" || v.Document != doc || v.ModelAnswer == "" {
			t.Errorf("%s: document %q (%q), model answer %q", v.Cell, v.DocumentName, v.Document, v.ModelAnswer)
		}
	}
}

// TestProgressOf: the list says the cells decided of all at level 1, of
// those level 1 edited or rejected at level 2 (the cells level 2 has to
// decide; an accepted cell it approves besides does not count), and which
// levels are signed off.
func TestProgressOf(t *testing.T) {
	d := &api.Decision{Decision: api.DecisionAccepted}
	r := &api.Decision{Decision: api.DecisionRejected}
	e := &api.Decision{Decision: api.DecisionEdited}
	g := &api.SignOffGrid{Levels: 2, Cells: []api.SignOffCell{{ID: "a", Level1: d, Level2: d}, {ID: "b", Level1: r}, {ID: "c", Level1: e, Level2: d}, {ID: "d"}}}
	if got, want := progressOf(g), "level 1: 3/4 · level 2: 1/2 edited or rejected"; got != want {
		t.Errorf("progress %q, want %q", got, want)
	}
	g.SignOffs = []api.LevelSignOff{{Level: 1, Reviewer: "alice"}}
	g.Levels = 1
	if got, want := progressOf(g), "level 1: 3/4 signed off"; got != want {
		t.Errorf("progress %q, want %q", got, want)
	}
}

// TestRenderAheadShared: a page rendered ahead and asked for meanwhile is
// rendered once (the request joins the render), and asked again it comes
// from the cache; reviewers asking at once for one page share one render.
func TestRenderAheadShared(t *testing.T) {
	d := testDesk(t, 30*time.Second, 2)
	pdf := docconvtest.NestedGroupsPDF(2)
	const key = "s3://docs/a.pdf@e1"
	d.pages.renderAhead(key, pdf, 2, renderDPI)
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := d.pages.charBoxes(context.Background(), key, pdf, 2); err != nil {
				t.Error(err)
			}
			if w := get(d, key, pdf, 2); w.Code != 200 {
				t.Errorf("page: %d %s", w.Code, w.Body)
			}
		}()
	}
	wg.Wait()
	if n := d.pages.jobs.Load(); n != 2 {
		t.Errorf("PDFium jobs for one page's boxes and image, rendered ahead and asked for 3 times: %d, want 2", n)
	}
}

// TestAheadCells: the pages rendered ahead are the next two cells' and
// the next open one's at the level the sign-off waits for.
func TestAheadCells(t *testing.T) {
	acc := &api.Decision{Level: 1, Decision: api.DecisionAccepted}
	edit := &api.Decision{Level: 1, Decision: api.DecisionEdited}
	cells := func(l1 ...*api.Decision) []api.SignOffCell {
		var out []api.SignOffCell
		for i, d := range l1 {
			out = append(out, api.SignOffCell{ID: fmt.Sprintf("q%d", i+1), Level1: d})
		}
		return out
	}
	tests := []struct {
		name string
		g    *api.SignOffGrid
		i    int
		want string
	}{
		{"opening a grid at level 1", &api.SignOffGrid{Cells: cells(acc, acc, acc, nil, nil)}, -1, "q1 q2 q4"},
		{"after a cell", &api.SignOffGrid{Cells: cells(nil, nil, nil, nil)}, 1, "q3 q4"},
		{"the last cell", &api.SignOffGrid{Cells: cells(nil, nil)}, 1, ""},
		{"level 2: the next edited", &api.SignOffGrid{Cells: cells(acc, acc, acc, acc, edit), SignOffs: []api.LevelSignOff{{Level: 1}}}, -1, "q1 q2 q5"},
	}
	for _, tt := range tests {
		if got := strings.Join(aheadCells(tt.g, tt.i), " "); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}
