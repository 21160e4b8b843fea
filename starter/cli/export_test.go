package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/memagent/memagent/api"
)

func TestWholeCommand(t *testing.T) {
	temp := float32(1)
	flags := &api.BatchReport{Manifest: "s3://b/manifests/m.jsonl", Model: "qwen", Samples: 8,
		Options: api.ModelOptions{Model: "qwen", ChunkTokens: 1000, Temperature: &temp}.WithDefaults()}
	if got, want := wholeCommand(flags, "memagent"),
		"starter batch --manifest s3://b/manifests/m.jsonl --samples 8 --chunk-tokens 1000 --temperature 1 --model qwen --reuse none"; got != want {
		t.Errorf("wholeCommand = %q, want %q", got, want)
	}
	one := &api.BatchReport{Manifest: "s3://b/it's here.jsonl", Options: api.ModelOptions{}.WithDefaults()}
	if got, want := wholeCommand(one, "memagent"),
		`starter batch --manifest 's3://b/it'\''s here.jsonl' --chunk-tokens 5000 --temperature 0.7 --reuse none`; got != want {
		t.Errorf("wholeCommand of one sample = %q, want %q", got, want)
	}

	// top_p has no flag: the BatchQA input itself, reuse none.
	topP := float32(0.5)
	other := &api.BatchReport{Manifest: "s3://b/m.jsonl", Model: "qwen", Samples: 2,
		Options: api.ModelOptions{Model: "qwen", TopP: &topP}.WithDefaults()}
	got := wholeCommand(other, "my queue")
	prefix := "temporal workflow start --type " + api.BatchQAName + " --task-queue 'my queue' --input '"
	if !strings.HasPrefix(got, prefix) || !strings.HasSuffix(got, "'") {
		t.Fatalf("wholeCommand with top_p = %q, want %s…'", got, prefix)
	}
	var in api.BatchQAInput
	if err := json.Unmarshal([]byte(strings.TrimSuffix(strings.TrimPrefix(got, prefix), "'")), &in); err != nil {
		t.Fatal(err)
	}
	if in.Manifest != other.Manifest || in.Samples != 2 || in.Reuse != api.ReuseNone || *in.Options.TopP != topP || in.Validate() != nil {
		t.Errorf("input %+v (%v), want the report's manifest, samples and options with reuse none", in, in.Validate())
	}
}
