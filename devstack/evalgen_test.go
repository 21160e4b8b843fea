package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/memagent/memagent/internal/dev/evalgen"
	"github.com/memagent/memagent/internal/tokenizer"
)

// genItem is a sample as a reader of MemAgent's format sees it.
type genItem struct {
	ID      string   `json:"_id"`
	Context string   `json:"context"`
	Input   string   `json:"input"`
	Answers []string `json:"answers"`
	Length  int      `json:"length"`
	Task    string   `json:"task"`
	Tokens  int      `json:"tokens"`
}

func runEvalGenCmd(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var o, e bytes.Buffer
	err = runTools(context.Background(), append([]string{"eval", "gen"}, args...), &o, &e)
	return o.String(), e.String(), err
}

// starter eval gen writes a set of every task into a file that decodes as
// MemAgent's format, sized and labelled as asked, and writes it the same
// way twice.
func TestEvalGenCommand(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "set.json")
	args := []string{"--task", "niah_single,niah_multikey,niah_multivalue,niah_multiquery,vt,fwe,hqa",
		"--lengths", "0.5K,1K", "--samples", "2", "--seed", "3", "--out", out,
		"--hotpotqa", "../internal/dev/evalgen/testdata/hotpot_tiny.json", "--value-type", "uuids"}
	stdout, stderr, err := runEvalGenCmd(t, args...)
	if err != nil {
		t.Fatalf("eval gen: %v\n%s", err, stderr)
	}
	if stdout != "" || !strings.Contains(stderr, "wrote 28 samples to "+out) {
		t.Errorf("stdout %q, stderr %q; want nothing on stdout and a summary on stderr", stdout, stderr)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var items []genItem
	if err := json.Unmarshal(raw, &items); err != nil {
		t.Fatalf("output does not decode: %v", err)
	}
	if len(items) != 7*2*2 {
		t.Fatalf("%d items, want 28", len(items))
	}
	tok, err := tokenizer.New(tokenizer.Qwen)
	if err != nil {
		t.Fatal(err)
	}
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	ids := map[string]bool{}
	for i, it := range items {
		wantTask, wantLength := evalgen.Tasks[i/4], []int{512, 1024}[i/2%2]
		if it.Task != wantTask || it.Length != wantLength {
			t.Errorf("item %d: task %q length %d, want %q %d", i, it.Task, it.Length, wantTask, wantLength)
		}
		if ids[it.ID] || it.ID == "" {
			t.Errorf("item %d: id %q empty or repeated", i, it.ID)
		}
		ids[it.ID] = true
		if n := tok.Count(it.Context); n != it.Tokens || genAbs(n-it.Length)*100 > it.Length {
			t.Errorf("%s: %d tokens, field says %d, length %d", it.ID, n, it.Tokens, it.Length)
		}
		if it.Input == "" || len(it.Answers) == 0 {
			t.Errorf("%s: input %q answers %q", it.ID, it.Input, it.Answers)
		}
		for _, a := range it.Answers {
			if a != "yes" && !strings.Contains(it.Context, a) {
				t.Errorf("%s: answer %q is not in the context", it.ID, a)
			}
			if strings.HasPrefix(it.Task, "niah") && !uuid.MatchString(a) {
				t.Errorf("%s: answer %q is not a UUID (--value-type uuids)", it.ID, a)
			}
		}
	}
	if fi, err := os.Stat(out); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("output file mode: %v, %v", fi.Mode(), err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) > 0 {
		t.Errorf("temporary files left behind: %v", left)
	}

	// Same flags, same bytes, to stdout this time.
	toStdout := slices.Clone(args)
	toStdout[slices.Index(toStdout, out)] = "-"
	again, _, err := runEvalGenCmd(t, toStdout...)
	if err != nil {
		t.Fatal(err)
	}
	if again != string(raw) {
		t.Error("the same flags wrote different bytes to stdout than to the file")
	}
}

// Bad flags fail with a clear message before anything is written.
func TestEvalGenBadFlags(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "set.json")
	for name, tt := range map[string]struct {
		args []string
		want string
	}{
		"unknown task":   {[]string{"--task", "niah_sngle"}, `unknown task "niah_sngle"`},
		"bad length":     {[]string{"--lengths", "8K,12Q"}, `"12Q" is not a length`},
		"no samples":     {[]string{"--samples", "0"}, "--samples is 0"},
		"neg samples":    {[]string{"--samples", "-1"}, "--samples is -1"},
		"hqa no file":    {[]string{"--task", "hqa"}, "--hotpotqa"},
		"hqa bad file":   {[]string{"--task", "hqa", "--hotpotqa", filepath.Join(dir, "none.json")}, "no such file"},
		"tokenizer":      {[]string{"--tokenizer", "llama"}, `unknown tokenizer "llama"`},
		"value type":     {[]string{"--value-type", "colours"}, `unknown value type "colours"`},
		"depth":          {[]string{"--depth", "1.5"}, "--depth is 1.5"},
		"zero keys":      {[]string{"--num-keys", "0"}, "--num-keys is 0"},
		"haystack":       {[]string{"--haystack-dir", dir}, "no .txt files"},
		"stray argument": {[]string{"niah_single"}, `unexpected argument "niah_single"`},
		"unknown flag":   {[]string{"--length", "8K"}, "flag provided but not defined"},
	} {
		args := append([]string{"--out", out}, tt.args...)
		stdout, stderr, err := runEvalGenCmd(t, args...)
		if err == nil || !strings.Contains(err.Error()+stderr, tt.want) {
			t.Errorf("%s: error %v (stderr %q), want one containing %q", name, err, stderr, tt.want)
		}
		if stdout != "" {
			t.Errorf("%s: wrote to stdout", name)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("bad flags left files: %v", entries)
	}
	if _, _, err := runEvalGenCmd(t, "--task", "vt"); err == nil || !strings.Contains(err.Error(), "--out is required") {
		t.Errorf("no --out: %v", err)
	}
}

// -h documents every flag.
func TestEvalGenHelp(t *testing.T) {
	_, stderr, _ := runEvalGenCmd(t, "-h")
	for _, f := range []string{"task", "lengths", "samples", "seed", "out", "tokenizer", "key-type", "value-type",
		"num-keys", "num-values", "num-queries", "depth", "haystack-dir", "vt-chains", "vt-hops", "fwe-alpha", "fwe-vocab", "hotpotqa"} {
		if !regexp.MustCompile(`(?m)^      --` + f + `( \w+)? +\S`).MatchString(stderr) {
			t.Errorf("-h does not document --%s", f)
		}
	}
	documented := regexp.MustCompile(`(?m)^ +(-\w, )?--([a-z-]+)`).FindAllStringSubmatch(stderr, -1)
	if len(documented) != 18 {
		t.Errorf("-h documents %d flags, want the 18 this test knows", len(documented))
	}
	for _, task := range evalgen.Tasks {
		if !strings.Contains(stderr, "  "+task+" ") {
			t.Errorf("-h does not describe task %s", task)
		}
	}
	if !slices.ContainsFunc(strings.Split(stderr, "\n"), func(l string) bool { return strings.Contains(l, "K = 1024") }) {
		t.Error("-h does not say what K means")
	}
}

func genAbs(x int) int { return max(x, -x) }
