package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.temporal.io/server/common/dynamicconfig"
)

// imageVersion splits "repo:v1.2.3" into the repository and the version's
// numbers.
func imageVersion(t *testing.T, image string) (string, []int) {
	t.Helper()
	repo, tag, ok := strings.Cut(image, ":")
	m := regexp.MustCompile(`^v?(\d+)\.(\d+)\.(\d+)$`).FindStringSubmatch(tag)
	if !ok || m == nil {
		t.Fatalf("image %q is not pinned to a version tag", image)
	}
	var v []int
	for _, s := range m[1:] {
		n, _ := strconv.Atoi(s)
		v = append(v, n)
	}
	return repo, v
}

// goModVersion is the version of module path that memagent's go.mod requires.
func goModVersion(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(path) + `\s+(v\S+)`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("go.mod requires no %s", path)
	}
	return string(m[1])
}

// TestComposeImages checks the images operators run today: Temporal's own
// server image at the version memagent embeds (no auto-setup, which is no
// longer built), admin-tools for the schemas, and versitygw 1.7 or later.
func TestComposeImages(t *testing.T) {
	p, err := loadCompose(t, "../.env.example", "simulator")
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range p.Services {
		if strings.Contains(s.Image, "auto-setup") {
			t.Errorf("%s runs %s: auto-setup is deprecated and no longer built; use temporalio/server with a schema job", name, s.Image)
		}
	}
	embedded := strings.TrimPrefix(goModVersion(t, "go.temporal.io/server"), "v")
	for _, tt := range []struct{ service, repo string }{
		{"temporal", "temporalio/server"},
		{"temporal-schema", "temporalio/admin-tools"},
	} {
		repo, v := imageVersion(t, p.Services[tt.service].Image)
		if repo != tt.repo {
			t.Errorf("%s runs %s, want %s", tt.service, repo, tt.repo)
		}
		if v[0] != 1 || v[1] < 31 {
			t.Errorf("%s runs %s: task-queue fairness needs server 1.31 or later", tt.service, p.Services[tt.service].Image)
		}
		if got := strings.TrimPrefix(p.Services[tt.service].Image, tt.repo+":"); got != embedded {
			t.Errorf("%s runs %s, memagent embeds server %s (go.mod): keep them equal", tt.service, got, embedded)
		}
	}
	repo, v := imageVersion(t, p.Services["s3"].Image)
	if repo != "versity/versitygw" || v[0] < 1 || (v[0] == 1 && v[1] < 7) {
		t.Errorf("s3 runs %s, want versity/versitygw v1.7 or later", p.Services["s3"].Image)
	}
	if got := p.Services["setup"].Command; !slices.Contains(got, "--create-namespace") {
		t.Errorf("setup runs %q: it must create the namespace (nothing else does since auto-setup)", got)
	}
}

// mountOf returns the host file a service mounts at target ("" if none).
func mountOf(s composeService, target string) string {
	for _, v := range s.Volumes {
		if v.Type == "bind" && v.Target == target {
			return v.Source
		}
	}
	return ""
}

// TestComposeDynamicConfig checks that the server reads the repository's
// dynamic config file, that the server's own loader accepts every key and
// value in it, and that it turns on what docs/DEPLOY.md says a cluster
// running memagent needs.
func TestComposeDynamicConfig(t *testing.T) {
	p, err := loadCompose(t, "../.env.example", "simulator")
	if err != nil {
		t.Fatal(err)
	}
	s := p.Services["temporal"]
	path := s.Environment["DYNAMIC_CONFIG_FILE_PATH"]
	if path == nil {
		t.Fatal("temporal has no DYNAMIC_CONFIG_FILE_PATH: the server would read no dynamic config")
	}
	src := mountOf(s, *path)
	if filepath.Clean(src) != filepath.Join("deploy", "temporal", "dynamicconfig.yaml") {
		t.Fatalf("temporal mounts %q at %s, want deploy/temporal/dynamicconfig.yaml", src, *path)
	}
	b, err := os.ReadFile(filepath.Join("..", src))
	if err != nil {
		t.Fatal(err)
	}
	loaded := dynamicconfig.LoadYamlFile(b)
	if err := loaded.Err(); err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	for _, w := range loaded.Warnings {
		t.Errorf("%s: %v", src, w)
	}
	for _, tt := range []struct {
		key  dynamicconfig.Key
		want any
	}{
		{dynamicconfig.MatchingEnableFairness.Key(), true},
		{dynamicconfig.MatchingUseNewMatcher.Key(), true},
		{dynamicconfig.TransferProcessorMaxPollRPS.Key(), 1000},
		{dynamicconfig.EnableActivityEagerExecution.Key(), true},
	} {
		cvs := loaded.Map[tt.key]
		if len(cvs) != 1 || cvs[0].Value != tt.want {
			t.Errorf("%s: %s = %+v, want one unconstrained value %v", src, tt.key, cvs, tt.want)
		}
	}
	doc, err := os.ReadFile("../docs/DEPLOY.md")
	if err != nil {
		t.Fatal(err)
	}
	for key := range loaded.Map {
		if !strings.Contains(strings.ToLower(string(doc)), key.String()) { // keys are case-insensitive
			t.Errorf("%s sets %s, which docs/DEPLOY.md does not explain", src, key)
		}
	}
}

// TestComposeSchemaJob checks that the schema job runs the repository's
// script for both databases the server is told to use.
func TestComposeSchemaJob(t *testing.T) {
	p, err := loadCompose(t, "../.env.example", "simulator")
	if err != nil {
		t.Fatal(err)
	}
	job, server := p.Services["temporal-schema"], p.Services["temporal"]
	if len(job.Command) != 2 || job.Command[0] != "sh" || filepath.Clean(mountOf(job, job.Command[1])) != filepath.Join("deploy", "temporal", "setup-schema.sh") {
		t.Errorf("temporal-schema runs %q, want sh and deploy/temporal/setup-schema.sh mounted", job.Command)
	}
	env := func(s composeService, k string) string {
		if v := s.Environment[k]; v != nil {
			return *v
		}
		return ""
	}
	for _, pair := range [][2]string{{"TEMPORAL_DB", "DBNAME"}, {"VISIBILITY_DB", "VISIBILITY_DBNAME"}, {"SQL_HOST", "POSTGRES_SEEDS"}, {"SQL_USER", "POSTGRES_USER"}, {"SQL_PASSWORD", "POSTGRES_PWD"}, {"SQL_PORT", "DB_PORT"}} {
		if a, b := env(job, pair[0]), env(server, pair[1]); a == "" || a != b {
			t.Errorf("temporal-schema %s=%q but temporal %s=%q: the schemas must go where the server looks", pair[0], a, pair[1], b)
		}
	}
	if got := env(job, "SQL_PLUGIN"); got != env(server, "DB") {
		t.Errorf("temporal-schema SQL_PLUGIN=%q, temporal DB=%q", got, env(server, "DB"))
	}
}
