package charts

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.temporal.io/server/common/dynamicconfig"
	"gopkg.in/yaml.v3"
)

// renderNotes renders NOTES.txt with args, which helm template skips: a
// copy of the chart gets a template that holds the notes as a string.
func renderNotes(t *testing.T, args ...string) string {
	t.Helper()
	bin := helm(t)
	dir := filepath.Join(t.TempDir(), "memagent")
	if err := os.CopyFS(dir, os.DirFS(chartDir)); err != nil {
		t.Fatal(err)
	}
	notes, err := os.ReadFile(filepath.Join(chartDir, "templates", "NOTES.txt"))
	if err != nil {
		t.Fatal(err)
	}
	wrapped := `{{- define "test.notes" }}` + string(notes) + "{{ end }}\nnotes: {{ include \"test.notes\" . | toJson }}\n"
	if err := os.WriteFile(filepath.Join(dir, "templates", "test-notes.yaml"), []byte(wrapped), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"template", "t", dir, "--namespace", "qa", "--show-only", "templates/test-notes.yaml"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("render NOTES.txt: %v: %s", err, stderr.String())
	}
	var doc struct{ Notes string }
	if err := yaml.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Notes
}

// TestNotesNameTheClusterSettings checks that what NOTES tells an operator
// to give the cluster is the dynamic config compose and deploy/bare/run.sh
// give their server, key for key and value for value, in a form Temporal's
// own loader reads.
func TestNotesNameTheClusterSettings(t *testing.T) {
	notes := renderNotes(t)
	// The block is the indented lines after "Temporal Cloud manages it itself:".
	_, after, ok := strings.Cut(notes, "Temporal Cloud manages it itself:\n")
	if !ok {
		t.Fatalf("NOTES has no dynamic config block:\n%s", notes)
	}
	var block []string
	for _, line := range strings.Split(after, "\n") {
		if line == "" && len(block) == 0 {
			continue
		}
		if !strings.HasPrefix(line, "  ") {
			break
		}
		block = append(block, strings.TrimPrefix(line, "  "))
	}
	fromNotes := dynamicconfig.LoadYamlFile([]byte(strings.Join(block, "\n")))
	if err := fromNotes.Err(); err != nil {
		t.Fatalf("NOTES' dynamic config does not load: %v\n%s", err, strings.Join(block, "\n"))
	}
	b, err := os.ReadFile("../deploy/temporal/dynamicconfig.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fromCompose := dynamicconfig.LoadYamlFile(b)
	if err := fromCompose.Err(); err != nil {
		t.Fatal(err)
	}
	keys := func(m dynamicconfig.ConfigValueMap) []string {
		var ks []string
		for k := range maps.Keys(m) {
			ks = append(ks, k.String())
		}
		return slices.Sorted(slices.Values(ks))
	}
	if got, want := keys(fromNotes.Map), keys(fromCompose.Map); !slices.Equal(got, want) {
		t.Fatalf("NOTES names %v, deploy/temporal/dynamicconfig.yaml %v", got, want)
	}
	for k, want := range fromCompose.Map {
		if got := fromNotes.Map[k]; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: NOTES %v, deploy/temporal/dynamicconfig.yaml %v", k, got, want)
		}
	}
}

// TestSetupCreatesTheNamespace checks setup.createNamespace: off, the Job
// only registers search attributes; on, it registers the namespace first.
func TestSetupCreatesTheNamespace(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"default", nil, "[/starter setup]"},
		{"createNamespace", []string{"--set", "setup.createNamespace=true", "--set", "setup.namespaceRetention=240h"}, "[/starter setup --create-namespace --retention 240h]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			job := find(t, mustRender(t, tt.args...), "Job")
			if got := fmt.Sprint(dig(job, "spec", "template", "spec", "containers", 0, "command")); got != tt.want {
				t.Errorf("setup Job command = %s, want %s", got, tt.want)
			}
			notes := renderNotes(t, tt.args...)
			if said := strings.Contains(notes, "registered by the setup Job"); said != (tt.name == "createNamespace") {
				t.Errorf("NOTES says the namespace is registered: %v, with %v", said, tt.args)
			}
		})
	}
	if _, err := render(t, "--set", "setup.namespaceRetention=3 days"); err == nil {
		t.Error("setup.namespaceRetention=\"3 days\" rendered; want the schema to refuse it")
	}
}
