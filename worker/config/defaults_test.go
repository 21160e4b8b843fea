package config_test

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/internal/docconv"
	"github.com/memagent/memagent/internal/inference"
	"github.com/memagent/memagent/worker/config"
)

// docsWithSettings are the documents whose tables list settings with
// their defaults, relative to this package.
var docsWithSettings = []string{"../../README.md", "../../docs/DEPLOY.md", "../../docs/DOCUMENTS.md"}

// codeDefaults are the defaults the code applies, rendered as the docs
// write them, for the settings whose default is a value (those whose
// default is a phrase, "none" or "what the server reports", are not here).
// Each comes from the one definition the code uses.
func codeDefaults() map[string][]string {
	d := config.Default()
	mib := func(n int64) []string { return []string{strconv.FormatInt(n>>20, 10)} }
	boolean := func(b bool) []string {
		if b {
			return []string{"true", "on"}
		}
		return []string{"false", "off"}
	}
	return map[string][]string{
		"TEMPORAL_ADDRESS":            {d.TemporalAddress},
		"TEMPORAL_NAMESPACE":          {d.TemporalNamespace},
		"MEMAGENT_TASK_QUEUE":         {d.TaskQueue},
		"AWS_ENDPOINT_URL_S3":         {string(d.S3Endpoint)},
		"AWS_REGION":                  {d.S3Region},
		"MEMAGENT_S3_PATH_STYLE":      boolean(!d.S3VirtualHostStyle),
		"MEMAGENT_BUCKET":             {d.Bucket},
		"MEMAGENT_CREATE_BUCKET":      boolean(d.CreateBucket),
		"MEMAGENT_CLAIM_DEPTH":        {strconv.Itoa(activities.DefaultClaimDepth)},
		"OPENAI_BASE_URL":             {strings.Join(d.ModelURLs, ",")},
		"MEMAGENT_MAX_IN_FLIGHT":      {strconv.Itoa(inference.DefaultMaxInFlight)},
		"MEMAGENT_MAX_CONVERTED_MB":   mib(docconv.DefaultMaxTextBytes),
		"MEMAGENT_PDF_MEMORY_MB":      mib(docconv.DefaultPDFMemoryBytes),
		"MEMAGENT_CONVERT_TIMEOUT":    {duration(docconv.DefaultConvertTimeout)},
		"MEMAGENT_OCR_PAGE_TIMEOUT":   {duration(docconv.DefaultOCRPageTimeout)},
		"MEMAGENT_OCR_MEMORY_MB":      mib(docconv.DefaultOCRMemoryBytes),
		"MEMAGENT_OCR_MAX_PAGES":      {strconv.Itoa(docconv.DefaultMaxOCRPages)},
		"MEMAGENT_OCR_BUDGET":         {duration(docconv.DefaultOCRBudget)},
		docconv.KnobMaxMessages:       {strconv.Itoa(docconv.DefaultMaxMessages)},
		docconv.KnobMaxMessageBytes:   mib(docconv.DefaultMaxMessageBytes),
		docconv.KnobMaxParts:          {strconv.Itoa(docconv.DefaultMaxParts)},
		docconv.KnobMaxMIMEDepth:      {strconv.Itoa(docconv.DefaultMaxMIMEDepth)},
		docconv.KnobMaxPartBytes:      mib(docconv.DefaultMaxPartBytes),
		docconv.KnobMaxHeaderBytes:    {strconv.Itoa(docconv.DefaultMaxHeaderBytes >> 10)},
		"MEMAGENT_CHUNK_CACHE_MB":     mib(activities.DefaultChunkCacheBytes),
		"MEMAGENT_MODEL_API":          {string(inference.APIOpenAI)},
		"OPENAI_API_VERSION":          {inference.DefaultAzureAPIVersion},
		"MEMAGENT_MODEL_TIMEOUT":      {duration(d.ModelTimeout)},
		"MEMAGENT_STOP_TIMEOUT":       {duration(d.StopTimeout)},
		"MEMAGENT_LOG_LEVEL":          {strings.ToLower(d.LogLevel.String())},
		"MEMAGENT_CODEC_CORS_ORIGINS": {strings.Join(d.CodecServer.AllowOrigins, ",")},
		"MEMAGENT_CODEC_ENCODE":       boolean(d.CodecServer.AllowEncode),
	}
}

// duration writes d as the docs do: 10m, 2m, 30s.
func duration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// settingRow is one row of a settings table in the docs.
type settingRow struct {
	where    string // file:line
	names    []string
	defaults string
}

var (
	backticked  = regexp.MustCompile("`([^`]*)`")
	settingName = regexp.MustCompile(`^[A-Z][A-Z0-9]*(_[A-Z0-9]+)+$`)
	aside       = regexp.MustCompile(`\s*\([^)]*\)`)
)

// settingRows reads every Markdown table of path that has a Default
// column: the settings named in backticks in its first column, and the
// Default cell.
func settingRows(t *testing.T, path string) []settingRow {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []settingRow
	col := -1 // the Default column of the table being read, or -1
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(text, "|") {
			col = -1
			continue
		}
		cells := strings.Split(strings.Trim(text, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		switch {
		case strings.HasPrefix(cells[0], "---"):
			continue
		case col < 0:
			col = -2 // a header without a Default column: skip the table
			for i, c := range cells {
				if c == "Default" {
					col = i
				}
			}
			continue
		case col == -2 || col >= len(cells):
			continue
		}
		var names []string
		for _, m := range backticked.FindAllStringSubmatch(cells[0], -1) {
			if settingName.MatchString(m[1]) {
				names = append(names, m[1])
			}
		}
		if len(names) > 0 {
			rows = append(rows, settingRow{where: filepath.Base(path) + ":" + strconv.Itoa(line), names: names, defaults: cells[col]})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// documented is the default a row gives name: the row's Default cell, or
// its part for name when the row names several settings and gives as many
// defaults, comma-separated ("any host, none"). Backticks and asides in
// parentheses are dropped.
func (r settingRow) documented(name string) string {
	parts := strings.Split(r.defaults, ", ")
	d := parts[0]
	if len(r.names) > 1 && len(parts) == len(r.names) {
		for i, n := range r.names {
			if n == name {
				d = parts[i]
			}
		}
	}
	d = strings.ReplaceAll(d, "`", "")
	return strings.TrimSpace(aside.ReplaceAllString(d, ""))
}

// TestDefaultsMatchDocs compares each default the docs' settings tables
// give with the one the code applies, and requires every such default to
// be documented in the README's table.
func TestDefaultsMatchDocs(t *testing.T) {
	want := codeDefaults()
	inReadme := map[string]bool{}
	for _, path := range docsWithSettings {
		for _, r := range settingRows(t, path) {
			for _, name := range r.names {
				alts, ok := want[name]
				if !ok {
					continue
				}
				if path == docsWithSettings[0] {
					inReadme[name] = true
				}
				got := r.documented(name)
				match := false
				for _, a := range alts {
					match = match || got == a
				}
				if !match {
					t.Errorf("%s: %s defaults to %q in the docs, %q in the code", r.where, name, got, alts[0])
				}
			}
		}
	}
	// The HTTP endpoint is in the telemetry table, which has no Default
	// column: its Meaning says "default `host:port`".
	readme, err := os.ReadFile(docsWithSettings[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(line, "| `MEMAGENT_HTTP_ADDR`") {
			inReadme["MEMAGENT_HTTP_ADDR"] = true
			if !strings.Contains(line, "default `"+config.DefaultHTTPAddr+"`") {
				t.Errorf("README.md: the MEMAGENT_HTTP_ADDR row does not say default `%s`: %s", config.DefaultHTTPAddr, line)
			}
		}
	}
	if !inReadme["MEMAGENT_HTTP_ADDR"] {
		t.Error("MEMAGENT_HTTP_ADDR is not in the README")
	}
	for name := range want {
		if !inReadme[name] {
			t.Errorf("%s (default %q) is not in the README's configuration table", name, want[name][0])
		}
	}
}

// TestDocsTableParsing keeps the parser of the docs honest: a row naming
// two settings splits its defaults, an aside is dropped.
func TestDocsTableParsing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "T.md")
	doc := "| Setting | Flag | Default | Meaning |\n|---|---|---|---|\n" +
		"| `A_ONE`, `A_TWO` | | `x` (note), 2 | m |\n| `B_ONE` | | on (in dev) | m |\n\n" +
		"| Environment | Meaning |\n|---|---|\n| `C_ONE` | default `y` |\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	rows := settingRows(t, path)
	if len(rows) != 2 {
		t.Fatalf("rows = %+v, want the two of the table with a Default column", rows)
	}
	for _, tt := range []struct {
		row       int
		name, def string
	}{{0, "A_ONE", "x"}, {0, "A_TWO", "2"}, {1, "B_ONE", "on"}} {
		if got := rows[tt.row].documented(tt.name); got != tt.def {
			t.Errorf("documented(%s) = %q, want %q", tt.name, got, tt.def)
		}
	}
}
