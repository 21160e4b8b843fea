package workflows_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/workflows"
)

// secretText is the forbidden object's content: no byte of it may reach
// any output.
const secretText = "TOP-SECRET: the merger closes on 3 March at 41.20 a share."

// TestBoundaryAgainstHostileCallers performs, through a raw JSON client on
// the embedded stack, each attack that once got past the boundary: a
// caller's own continue-as-new state for each workflow, the shared answer
// cache as an output prefix, a claim inside another run's claimed prefix,
// another run's outputs (and a path with "..") as a document, and a batch
// manifest naming a document the worker may not read. Each ends as
// memagent.BadInput or memagent.Forbidden (the batch item as a Forbidden
// item) with no model call, no byte of the forbidden object in any
// output, every victim object byte-identical and the worker alive.
func TestBoundaryAgainstHostileCallers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded stack")
	}
	s := startContractStack(t)
	ctx := context.Background()
	bucket := s.Dev.Stack.Bucket
	if err := s.store.EnsureBucket(ctx, "secret", true); err != nil {
		t.Fatal(err)
	}
	secret := s3store.Location{Bucket: "secret", Key: "secret.txt"}
	if err := s.store.Put(ctx, secret, []byte(secretText), "text/plain"); err != nil {
		t.Fatal(err)
	}
	// The attacker's hand-made chunk index, uploaded as a document.
	forgedIndex := fmt.Sprintf("s3://%s/docs/forged-index.json", bucket)
	if err := s.store.Put(ctx, mustLoc(forgedIndex), []byte(`{"sha256":"x","bytes":58,"tokens":5,"tokenizer":"qwen2.5","chunk_tokens":5000,"chunks":[{"start":0,"end":58,"tokens":5}]}`), "application/json"); err != nil {
		t.Fatal(err)
	}

	// The victims: a question with the run's own prefix, and one with a
	// claimed prefix.
	var victim workflows.DocumentQAResult
	if err := s.start(t, "victim", api.DocumentQAName,
		`{"document":"`+s.doc+`","question":"What is the vault code?","options":{"chunk_tokens":2000}}`).Get(ctx, &victim); err != nil {
		t.Fatal(err)
	}
	claimed := fmt.Sprintf("s3://%s/team/review1/", bucket)
	if err := s.start(t, "victim-claimed", api.DocumentQAName,
		`{"document":"`+s.doc+`","question":"What is the vault code?","output_prefix":"`+claimed+`","options":{"chunk_tokens":2000}}`).Get(ctx, nil); err != nil {
		t.Fatal(err)
	}
	victimPrefix := strings.TrimSuffix(victim.TracePrefix, "chunks/")
	snapshot := s.objects(t, bucket)
	secretKeys := s.objects(t, "secret")
	calls := s.modelCalls()

	prepared := `{"document":"s3://secret/secret.txt","etag":"","index_uri":"` + forgedIndex + `","chunks":1,"tokens":5,"bytes":58}`
	stateRefused := "state is set by the workflow itself"
	for _, tt := range []struct {
		name, workflow, input, wantType, wantMessage string
	}{
		{"DocumentQA with its own state", api.DocumentQAName,
			`{"document":"` + s.doc + `","question":"What does it say?","state":{"prepared":` + prepared +
				`,"cursor":0,"memory":"m","runs":1,"trace_prefix":"` + victimPrefix + `"}}`,
			api.ErrForbidden, stateRefused},
		{"DocumentQA with a state naming a run", api.DocumentQAName,
			`{"document":"` + s.doc + `","question":"What does it say?","state":{"from":"` + victim.RunID + `","prepared":` + prepared +
				`,"cursor":0,"memory":"m","runs":1,"trace_prefix":"` + victimPrefix + `"}}`,
			api.ErrForbidden, stateRefused},
		{"ReviewDocument with an answered question quoting the secret", api.ReviewDocumentName,
			`{"document":"` + s.doc + `","questions":[{"question":"What does it say?"}],"state":{"prepared":` + prepared +
				`,"prefix":"s3://secret/out/","runs":1,"questions":[{"cursor":1,"memory":"m","answered":true,"answer":"x",` +
				`"evidence":[{"chunk":0,"start":0,"end":58,"passage":{"start":0,"end":58},"supports_answer":true}]}]}}`,
			api.ErrForbidden, stateRefused},
		{"BatchQA with an expanded manifest of its own", api.BatchQAName,
			`{"manifest":"s3://` + bucket + `/docs/none.jsonl","state":{"name":"b","next_page":1,"runs":1,"expanded":{"format":"jsonl",` +
				`"items":100000000000,"pages":1,"report_prefix":"s3://secret/report/","work_prefix":"` + victimPrefix + `work/"}}}`,
			api.ErrForbidden, stateRefused},
		{"the answer cache as an output prefix", api.DocumentQAName,
			`{"document":"` + s.doc + `","question":"What is the vault code?","output_prefix":"s3://` + bucket + `/answers/0123456789abcdef0123456789abcdef/"}`,
			api.ErrForbidden, "answers/"},
		{"a claim inside another workflow's claimed prefix", api.DocumentQAName,
			`{"document":"` + s.doc + `","question":"What is the vault code?","output_prefix":"` + claimed + `questions/q1/"}`,
			api.ErrForbidden, "another workflow's outputs"},
		{"another run's result as the document", api.DocumentQAName,
			`{"document":"` + victim.ResultURI + `","question":"What was the answer?"}`,
			api.ErrForbidden, "where runs keep their outputs"},
		{"a document path with ..", api.DocumentQAName,
			`{"document":"s3://` + bucket + `/docs/../` + strings.TrimPrefix(victim.ResultURI, "s3://"+bucket+"/") + `","question":"What was the answer?"}`,
			api.ErrBadInput, `".."`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			id := "attack-" + strings.ReplaceAll(tt.name, " ", "-")
			err := s.start(t, id, tt.workflow, tt.input).Get(ctx, nil)
			var appErr *temporal.ApplicationError
			if !errors.As(err, &appErr) || appErr.Type() != tt.wantType || !strings.Contains(appErr.Error(), tt.wantMessage) {
				t.Fatalf("error = %v, want %s saying %q", err, tt.wantType, tt.wantMessage)
			}
			t.Logf("%s", appErr.Message())
		})
	}

	t.Run("a manifest line naming a forbidden document", func(t *testing.T) {
		manifest := fmt.Sprintf("s3://%s/docs/hostile.jsonl", bucket)
		if err := s.store.Put(ctx, mustLoc(manifest), []byte(`{"id":"steal","document":"s3://secret/secret.txt","question":"What does it say?"}`+"\n"), "application/x-ndjson"); err != nil {
			t.Fatal(err)
		}
		var res api.BatchQAResult
		if err := s.start(t, "attack-manifest", api.BatchQAName, `{"manifest":"`+manifest+`"}`).Get(ctx, &res); err != nil {
			t.Fatal(err)
		}
		if res.Failed != 1 || res.Succeeded != 0 {
			t.Fatalf("batch result = %+v, want the one item failed", res)
		}
		line, err := s.store.ReadAll(ctx, mustLoc(res.ReportPrefix+"results.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(line), api.ErrForbidden) || strings.Contains(string(line), `"document_bytes"`) {
			t.Errorf("results.jsonl = %s, want the item failed as %s", line, api.ErrForbidden)
		}
	})

	if n := s.modelCalls() - calls; n != 0 {
		t.Errorf("the attacks made %d model calls", n)
	}
	after := s.objects(t, bucket)
	for key, data := range snapshot {
		if after[key] != data {
			t.Errorf("victim object %s changed", key)
		}
	}
	for key, data := range after {
		if strings.Contains(data, "TOP-SECRET") || strings.Contains(data, "41.20 a share") {
			t.Errorf("%s holds the forbidden object's text", key)
		}
	}
	if got := s.objects(t, "secret"); len(got) != len(secretKeys) {
		t.Errorf("the forbidden bucket holds %d objects, had %d", len(got), len(secretKeys))
	}
	// The worker is alive and answers a normal question.
	var ok workflows.DocumentQAResult
	if err := s.start(t, "after-attacks", api.DocumentQAName,
		`{"document":"`+s.doc+`","question":"What is the vault code?","options":{"chunk_tokens":2000}}`).Get(ctx, &ok); err != nil || !strings.Contains(ok.Answer, "7391-ALPHA") {
		t.Fatalf("a normal question after the attacks: %q, %v", ok.Answer, err)
	}
}

// objects reads every object of a bucket.
func (s *contractStack) objects(t *testing.T, bucket string) map[string]string {
	t.Helper()
	keys, err := s.store.List(context.Background(), bucket, "", 10000)
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]string, len(keys))
	for _, k := range keys {
		data, err := s.store.ReadAll(context.Background(), s3store.Location{Bucket: bucket, Key: k})
		if err != nil {
			t.Fatal(err)
		}
		out[k] = string(data)
	}
	return out
}
