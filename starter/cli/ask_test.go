package cli

import (
	"testing"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/memclient"
)

// Workflow ids are how a second ask joins the first: a request without a
// batch keeps the id it had before batches existed.
func TestWorkflowID(t *testing.T) {
	in := api.DocumentQAInput{Document: "s3://memagent/documents/sha256/ab/contract.txt", Question: "Who may terminate the agreement?",
		GoldAnswers: []string{"the licensee"}, Options: api.ModelOptions{ChunkTokens: 2000}}
	if got, want := memclient.WorkflowID(in), "memagent-qa-560b2fc39e0b968f"; got != want {
		t.Errorf("workflowID without a batch = %s, want %s, the id it always had", got, want)
	}
	batched := in
	batched.BatchID = "eval-7"
	if memclient.WorkflowID(batched) == memclient.WorkflowID(in) {
		t.Error("a batch's run has the id of the same request without a batch, want its own")
	}
}

func TestUploadedSHA256(t *testing.T) {
	hex := "5038f8a36ddeaaae8d8d5df2908433c8c3c697565753f8c5beb50c46410eedf9"
	tests := map[string]string{
		"documents/sha256/" + hex + "/contract.txt": hex,
		"documents/sha256/" + hex:                   "",
		"documents/sha256/XYZ/contract.txt":         "",
		"papers/contract.txt":                       "",
	}
	for key, want := range tests {
		if got := uploadedSHA256(key); got != want {
			t.Errorf("uploadedSHA256(%q) = %q, want %q", key, got, want)
		}
	}
}
