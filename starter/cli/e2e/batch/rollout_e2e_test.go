package batch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/dev/simulator"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/tokenizer"
	"github.com/memagent/memagent/rollout"
	"github.com/memagent/memagent/starter/cli/clitest"
	"github.com/memagent/memagent/workflows"
)

// TestRolloutExportEndToEnd is the done-means of rollout groups and their
// export: a two-item batch with --samples 2 exports 4 samples whose turns
// are chunks + 1 each, exactly one of them (the last) with loss mask 0,
// and equal per-turn rewards that sum to the sample's reward; every
// exported prompt is one the simulator received, byte for byte, and every
// response the text it sent back.
func TestRolloutExportEndToEnd(t *testing.T) {
	d := clitest.Stack(t)
	clitest.StartWorker(t)
	cfg, store := clitest.Store(t)
	tok, _ := tokenizer.New(tokenizer.Qwen)
	var manifest bytes.Buffer
	for i := range 2 {
		loc := s3store.Location{Bucket: cfg.Bucket, Key: fmt.Sprintf("rollout-e2e/doc-%d.txt", i)}
		text := docgen.Needle(tok, clitest.DocTokens(i), 0.3+0.4*float64(i), uint64(700+i))
		if err := store.Put(context.Background(), loc, []byte(text), "text/plain"); err != nil {
			t.Fatal(err)
		}
		line, _ := json.Marshal(map[string]any{
			"id": fmt.Sprintf("item-%d", i), "document": loc.String(),
			"question": docgen.Question, "answers": []string{docgen.Answer},
		})
		manifest.Write(append(line, '\n'))
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "manifest.jsonl")
	if err := os.WriteFile(path, manifest.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	d.Simulator.Reset()
	out, _ := clitest.RunBatch(t, "--manifest", path, "--samples", "2", "--name", "rollout-e2e", "--chunk-tokens", "600", "--json")
	res := out.Result
	if res.Items != 2 || res.Succeeded != 4 || res.Samples != 2 || res.Groups == nil || res.Groups.Items != 2 {
		t.Fatalf("batch result = %+v", res)
	}
	items := clitest.ReadResults(t, store, out.Report.ResultsURI)
	if len(items) != 4 {
		t.Fatalf("results.jsonl has %d lines, want 4", len(items))
	}
	file := filepath.Join(dir, "rollouts.jsonl")
	stdout, stderr, err := clitest.RunCLI(t, "export", "rollouts", res.WorkflowID, "--out", file, "--json")
	if err != nil {
		t.Fatalf("export: %v\nstderr: %s", err, stderr)
	}
	var st rollout.Stats
	if err := json.Unmarshal([]byte(stdout), &st); err != nil {
		t.Fatalf("export --json printed %q: %v", stdout, err)
	}
	if st.Samples != 4 || st.Groups != 2 || len(st.Incomplete) != 0 {
		t.Fatalf("export stats %+v, want 4 samples in 2 groups", st)
	}
	checkRollouts(t, d.Simulator.Calls(), res.WorkflowID, items, file)

	// The samples' runs by the ids the batch gave them (<batch>.<seq>,
	// <batch>.<seq>.s<k>): listed by `runs --batch`, read by `status`.
	rows, stderr, err := clitest.RunCLI(t, "runs", "--batch", "rollout-e2e", "--json")
	if err != nil {
		t.Fatalf("runs --batch: %v\n%s", err, stderr)
	}
	for _, r := range items {
		if id := workflows.SampleWorkflowID(res.WorkflowID, r.Seq, r.Sample); !strings.Contains(rows, `"workflow_id": "`+id+`"`) && !strings.Contains(rows, `"workflow_id":"`+id+`"`) {
			t.Errorf("runs --batch does not list %s:\n%s", id, rows)
		}
	}
	sample := workflows.SampleWorkflowID(res.WorkflowID, 1, 1)
	status, stderr, err := clitest.RunCLI(t, "status", sample, "--json")
	var p struct {
		WorkflowID string `json:"workflow_id"`
		Stage      string `json:"stage"`
	}
	if err != nil || json.Unmarshal([]byte(status), &p) != nil || p.WorkflowID != sample || p.Stage != api.StageDone {
		t.Errorf("status %s: %v\n%s%s", sample, err, status, stderr)
	}
}

// checkRollouts checks an export of the batch whose results are items:
// every sample of items has chunks + 1 turns in order, exactly one of them
// (the last) with loss mask 0, and equal per-turn rewards that sum to the
// sample's reward; every exported prompt is one the simulator received
// (calls), byte for byte, and every response the text it sent back; the
// file holds no other sample.
func checkRollouts(t *testing.T, calls []simulator.Call, batchID string, items []api.BatchItemResult, file string) {
	t.Helper()
	chunks := map[[2]int]int{}
	answers := map[[2]int]string{}
	for _, r := range items {
		k := [2]int{r.Seq, r.Sample}
		chunks[k], answers[k] = r.Chunks, r.Answer
		if want := workflows.SampleWorkflowID(batchID, r.Seq, r.Sample); r.WorkflowID != want {
			t.Errorf("seq %d sample %d ran as %s, want %s", r.Seq, r.Sample, r.WorkflowID, want)
		}
	}
	// What the simulator received and sent back, by the prompt's digest.
	sent := map[string]map[string]bool{}
	for _, c := range calls {
		if len(c.Messages) != 1 || c.Messages[0] != "user" {
			t.Errorf("the simulator received messages %v, want one user message", c.Messages)
		}
		if sent[c.PromptSHA256] == nil {
			sent[c.PromptSHA256] = map[string]bool{}
		}
		sent[c.PromptSHA256][c.Output] = true
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	bySample := map[[2]int][]rollout.Record{}
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte{'\n'}) {
		var rec rollout.Record
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatalf("export line %s: %v", line, err)
		}
		k := [2]int{rec.Seq, rec.Sample}
		bySample[k] = append(bySample[k], rec)
		if len(rec.Messages) != 1 || rec.Messages[0].Role != "user" {
			t.Fatalf("record %v turn %d has messages %+v", k, rec.Turn, rec.Messages)
		}
		sum := sha256.Sum256([]byte(rec.Messages[0].Content))
		outputs, ok := sent[hex.EncodeToString(sum[:])]
		switch {
		case !ok:
			t.Errorf("record %v turn %d: the simulator never received this prompt", k, rec.Turn)
		case !outputs[rec.Response]:
			t.Errorf("record %v turn %d: response %q is not what the simulator sent for this prompt", k, rec.Turn, rec.Response)
		}
		if !rec.PromptVerified || rec.Model == "" || rec.PromptTokens == 0 || rec.Sampling.MaxTokens == 0 {
			t.Errorf("record %v turn %d: verified %v model %q prompt tokens %d sampling %+v",
				k, rec.Turn, rec.PromptVerified, rec.Model, rec.PromptTokens, rec.Sampling)
		}
	}
	if len(bySample) != len(items) {
		t.Errorf("the export holds %d samples, want %d", len(bySample), len(items))
	}
	for k, recs := range bySample {
		if _, ok := chunks[k]; !ok {
			t.Errorf("the export holds sample %v, which it should have left out", k)
			continue
		}
		if want := chunks[k] + 1; len(recs) != want || chunks[k] < 2 {
			t.Errorf("sample %v has %d turns, want chunks (%d) + 1", k, len(recs), chunks[k])
		}
		finals, sum := 0, 0.0
		want := rollout.SampleReward(answers[k], []string{docgen.Answer}, rollout.RewardSubEM)
		for i, rec := range recs {
			if rec.Turn != i || rec.Turns != len(recs) || rec.Group != fmt.Sprintf("item-%d", k[0]) {
				t.Errorf("sample %v line %d: turn %d of %d, group %q", k, i, rec.Turn, rec.Turns, rec.Group)
			}
			if rec.LossMask == 0 {
				finals++
				if i != len(recs)-1 || rec.Kind != "final" || rec.Chunk != nil {
					t.Errorf("sample %v: loss mask 0 on turn %d (%s)", k, i, rec.Kind)
				}
			} else if rec.LossMask != 1 || rec.Kind != "update" || rec.Chunk == nil || rec.Chunk.Index != i || rec.Chunk.End <= rec.Chunk.Start {
				t.Errorf("sample %v turn %d: loss mask %d kind %s chunk %+v", k, i, rec.LossMask, rec.Kind, rec.Chunk)
			}
			if rec.Reward != recs[0].Reward || rec.SampleReward != want {
				t.Errorf("sample %v turn %d: reward %v (turn 0: %v), sample reward %v, want %v", k, i, rec.Reward, recs[0].Reward, rec.SampleReward, want)
			}
			sum += rec.Reward
		}
		if finals != 1 || math.Abs(sum-want) > 1e-9 {
			t.Errorf("sample %v: %d turns with loss mask 0, rewards sum to %v, want 1 and %v", k, finals, sum, want)
		}
	}
}
