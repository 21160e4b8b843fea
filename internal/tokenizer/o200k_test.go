package tokenizer

import (
	"encoding/json"
	"os"
	"slices"
	"testing"
)

// TestO200KGolden compares the token ids of every golden string with those
// of an independent implementation, the npm package js-tiktoken with its
// o200k_base ranks. Regenerate the file with geno200k.sh.
func TestO200KGolden(t *testing.T) {
	raw, err := os.ReadFile("testdata/o200k_golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var g golden
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatalf("parse golden file: %v", err)
	}
	if len(g.Cases) < 150 {
		t.Fatalf("golden file has %d cases, want at least 150", len(g.Cases))
	}
	tok, err := New(O200K)
	if err != nil {
		t.Fatal(err)
	}
	bpe := tok.(*bpeTokenizer)
	cl, err := New(CL100K)
	if err != nil {
		t.Fatal(err)
	}
	tokens, differ := 0, 0
	for i, c := range g.Cases {
		tokens += len(c.IDs)
		got := bpe.encode(c.Text)
		if !slices.Equal(got, c.IDs) {
			t.Errorf("case %d %q:\n got  %v\n want %v (%s)", i, c.Text, got, c.IDs, g.Package)
			continue
		}
		if n := tok.Count(c.Text); n != len(c.IDs) {
			t.Errorf("case %d %q: Count = %d, want %d", i, c.Text, n, len(c.IDs))
		}
		checkLens(t, c.Text, tok.TokenLens(c.Text))
		if cl.Count(c.Text) != len(c.IDs) {
			differ++
		}
	}
	t.Logf("%d strings, %d tokens; cl100k_base counts %d of them differently", len(g.Cases), tokens, differ)
	if differ < 20 {
		t.Errorf("cl100k_base counts only %d golden strings differently: is o200k_base really loaded?", differ)
	}
}

func TestO200KNames(t *testing.T) {
	for _, name := range []string{O200K, "o200k"} {
		tok, err := New(name)
		if err != nil {
			t.Fatalf("New(%q): %v", name, err)
		}
		if tok.Name() != O200K {
			t.Errorf("New(%q).Name() = %q, want %q", name, tok.Name(), O200K)
		}
	}
}

func TestForModel(t *testing.T) {
	for _, tc := range []struct{ model, want string }{
		{"gpt-4o", O200K},
		{"gpt-4o-2024-11-20", O200K},
		{"gpt-4o-mini", O200K},
		{"GPT-4o", O200K},
		{"openai/gpt-4.1", O200K},
		{"gpt-4.1-mini", O200K},
		{"gpt-4.5-preview", O200K},
		{"gpt-5", O200K},
		{"gpt-5-nano", O200K},
		{"gpt-5.1", O200K},
		{"o1", O200K},
		{"o1-preview", O200K},
		{"o3-mini", O200K},
		{"o4-mini-2025-04-16", O200K},
		{"chatgpt-4o-latest", O200K},
		{"gpt-oss-120b", O200K},
		{"gpt-4", CL100K},
		{"gpt-4-turbo", CL100K},
		{"gpt-4-32k-0613", CL100K},
		{"gpt-3.5-turbo", CL100K},
		{"gpt-35-turbo", CL100K}, // Azure's spelling
		{"BytedTsinghua-SIA/RL-MemoryAgent-14B", ""},
		{"memagent-simulator", ""},
		{"o10-model", ""},
		{"my-deployment", ""},
		{"", ""},
	} {
		if got := ForModel(tc.model); got != tc.want {
			t.Errorf("ForModel(%q) = %q, want %q", tc.model, got, tc.want)
		}
	}
}
