package cli

import (
	"slices"
	"testing"
)

func TestLocalLink(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"grid.json", "grid.json"},
		{"./results.csv", "results.csv"},
		{"sub/chart.svg", "sub/chart.svg"},
		{"#q1-detail", ""},
		{"", ""},
		{"../other/report.json", ""},
		{"sub/../../x", ""},
		{"/etc/passwd", ""},
		{"https://example.com/grid.json", ""},
		{"//example.com/grid.json", ""},
		{"s3://bucket/key", ""},
		{"mailto:a@b", ""},
		{"grid.json?x=1", ""},
		{`a\..\b`, ""},
	} {
		t.Run(tc.in, func(t *testing.T) {
			if got := localLink(tc.in); got != tc.want {
				t.Errorf("localLink(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestRewriteLinks(t *testing.T) {
	page := `<!doctype html><html><head><title>a &amp; b</title></head><body>
<p><a href="grid.json">grid.json</a> · <a href="./grid.csv">grid.csv</a> · <a href="#q1">q1</a> · <a href="https://x/grid.json">x</a></p>
<img src="chart.svg" alt="chart"><br/>
<script>var s = '<a href="grid.json">';</script>
</body></html>`
	links, err := pageLinks([]byte(page))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"grid.json", "grid.csv", "chart.svg"}; !slices.Equal(links, want) {
		t.Errorf("pageLinks = %q, want %q", links, want)
	}
	out, err := rewriteLinks([]byte(page), map[string]string{"grid.json": "r_files/grid.json", "grid.csv": "r_files/grid.csv", "chart.svg": "r%20x_files/chart.svg"})
	if err != nil {
		t.Fatal(err)
	}
	want := `<!doctype html><html><head><title>a &amp; b</title></head><body>
<p><a href="r_files/grid.json">grid.json</a> · <a href="r_files/grid.csv">grid.csv</a> · <a href="#q1">q1</a> · <a href="https://x/grid.json">x</a></p>
<img src="r%20x_files/chart.svg" alt="chart"><br/>
<script>var s = '<a href="grid.json">';</script>
</body></html>`
	if string(out) != want {
		t.Errorf("rewriteLinks:\n got %s\nwant %s", out, want)
	}
}
