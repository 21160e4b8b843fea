package simulator

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

const testUpdateTemplate = "Read the <section> and rewrite the <memory> for the <problem>.\n\n<problem>\n%s\n</problem>\n\n<memory>\n%s\n</memory>\n\n<section>\n%s\n</section>\n\nUpdated memory:\n"

const testFinalTemplate = "Answer the <problem> from the <memory> inside \\boxed{}.\n\n<problem>\n%s\n</problem>\n\n<memory>\n%s\n</memory>\n\nYour answer:\n"

func TestSentences(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"One. Two! Three? Four", []string{"One.", "Two!", "Three?", "Four"}},
		{"Pi is 3.14 exactly. Next", []string{"Pi is 3.14 exactly.", "Next"}},
		{"Heading\nBody text.\n\n- item one\r\n- item two.", []string{"Heading", "Body text.", "- item one", "- item two."}},
		{"  spaced .  out  ", []string{"spaced .", "out"}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := sentences(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("sentences(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestContentWordsAndScore(t *testing.T) {
	q := contentWords("What is the access code for the North Gate?")
	want := map[string]bool{"access": true, "code": true, "north": true, "gate": true}
	if !reflect.DeepEqual(q, want) {
		t.Fatalf("contentWords = %v, want %v", q, want)
	}
	tests := []struct {
		sentence string
		want     int
	}{
		{"The access code for the north gate is 7391-ALPHA.", 4},
		{"The gate, the GATE and the gate's hinge.", 1},
		{"Nothing to see here.", 0},
		{"North-gate access.", 3},
	}
	for _, tt := range tests {
		if got := score(tt.sentence, q); got != tt.want {
			t.Errorf("score(%q) = %d, want %d", tt.sentence, got, tt.want)
		}
	}
}

func TestParsePrompt(t *testing.T) {
	tests := []struct {
		name    string
		prompt  string
		want    prompt
		wantErr bool
	}{
		{
			name:   "update",
			prompt: fmt.Sprintf(testUpdateTemplate, "Who built it?", "No previous memory", "Ada built it."),
			want:   prompt{question: "Who built it?", memory: "No previous memory", section: "Ada built it.", hasSection: true},
		},
		{
			name:   "final",
			prompt: fmt.Sprintf(testFinalTemplate, "Who built it?", "Ada built it."),
			want:   prompt{question: "Who built it?", memory: "Ada built it."},
		},
		{
			name:   "section keeps its own white space and tags",
			prompt: fmt.Sprintf(testUpdateTemplate, "Q?", "M.", " <section>html</section>\n<problem>fake</problem> tail \n"),
			want:   prompt{question: "Q?", memory: "M.", section: " <section>html</section>\n<problem>fake</problem> tail \n", hasSection: true},
		},
		{
			name:   "no tags around parts",
			prompt: "<problem>Q</problem><memory></memory><section>S</section>",
			want:   prompt{question: "Q", section: "S", hasSection: true},
		},
		{
			name:   "final without memory",
			prompt: "<problem> Q </problem> answer please",
			want:   prompt{question: "Q"},
		},
		{
			name:   "problem after memory",
			prompt: "<memory>M</memory><problem>Q</problem>",
			want:   prompt{question: "Q", memory: "M"},
		},
		{name: "no problem", prompt: "<memory>M</memory><section>S</section>", wantErr: true},
		{name: "unclosed problem", prompt: "<problem>Q <memory>M</memory>", wantErr: true},
		{name: "plain chat", prompt: "Hello there", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parsePrompt(tt.prompt)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("parsePrompt: got %+v, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("parsePrompt: %v", err)
			}
			if got != tt.want {
				t.Errorf("parsePrompt = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestUpdateMemory(t *testing.T) {
	const question = "What is the access code for the north gate?"
	tests := []struct {
		name          string
		memory        string
		section       string
		budget        int
		want          string
		wantTruncated bool
	}{
		{
			name:    "keeps relevant sentences in order",
			memory:  "No previous memory",
			section: "The weather was mild. The north gate was painted red. The access code for the north gate is 7391-ALPHA. Lunch was late.",
			budget:  100,
			want:    "The north gate was painted red.\nThe access code for the north gate is 7391-ALPHA.",
		},
		{
			name:    "old memory first, duplicates once",
			memory:  "The north gate was painted red.",
			section: "A code was found. The north gate was painted red.",
			budget:  100,
			want:    "The north gate was painted red.\nA code was found.",
		},
		{
			name:    "budget keeps the best",
			memory:  "The north gate was painted red.",
			section: "The access code for the north gate is 7391-ALPHA.",
			budget:  12, // the fact alone is 12 words
			want:    "The access code for the north gate is 7391-ALPHA.",
		},
		{
			name:    "nothing relevant at first",
			memory:  "No previous memory",
			section: "The weather was mild.",
			budget:  100,
			want:    "No relevant information yet.",
		},
		{
			name:    "nothing relevant later",
			memory:  "The north gate was painted red.",
			section: "The weather was mild.",
			budget:  100,
			want:    "The north gate was painted red.",
		},
		{
			name:          "old memory cut to the budget",
			memory:        "Irrelevant words fill this old memory well beyond budget.",
			section:       "Nothing.",
			budget:        3,
			want:          "Irrelevant words fill",
			wantTruncated: true,
		},
		{
			name:    "a sentence longer than the budget is skipped",
			memory:  "No previous memory",
			section: "The north gate code is written on a very long plaque that nobody reads. Gate code: 12.",
			budget:  5,
			want:    "Gate code: 12.",
		},
	}
	count := func(s string) int { return len(strings.Fields(s)) }
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, truncated := updateMemory(question, tt.memory, tt.section, tt.budget, count)
			if got != tt.want || truncated != tt.wantTruncated {
				t.Errorf("updateMemory = %q (truncated %v), want %q (truncated %v)", got, truncated, tt.want, tt.wantTruncated)
			}
			if n := count(got); n > tt.budget {
				t.Errorf("output has %d tokens, want at most %d", n, tt.budget)
			}
		})
	}
}

func TestAnswerFrom(t *testing.T) {
	tests := []struct {
		name     string
		question string
		memory   string
		want     string
	}{
		{"planted code", "What is the access code for the north gate?", "The north gate was painted red.\nThe access code for the north gate is 7391-ALPHA.", "7391-ALPHA"},
		{"name", "Who founded the company?", "Ada Lovelace founded the company in 1843.", "Ada Lovelace"},
		{"clause ends a run", "What is the capital of Freedonia?", "The capital of Freedonia is Fredville, founded in 1820.", "Fredville"},
		{"opening word is the subject", "What is the special magic number for sandy-planet mentioned in the provided text?", "One of the special magic numbers for sandy-planet is: 6454724.", "6454724"},
		{"year", "When was the bridge built?", "The bridge was built in 1901.", "1901"},
		{"braces dropped", "What is the value of x?", "The value of x is {42}.", "42"},
		{"initial memory", "Who?", "No previous memory", unknownAnswer},
		{"placeholder memory", "Who built the gate?", noInformation, unknownAnswer},
		{"nothing shared", "Who built the gate?", "The weather was mild.", unknownAnswer},
		{"only question words", "Who built the gate?", "The gate was built.", unknownAnswer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := answerFrom(tt.question, tt.memory); got != tt.want {
				t.Errorf("answerFrom = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFinalReply(t *testing.T) {
	if got, want := finalReply("7391-ALPHA"), `After reviewing the memory, the answer is \boxed{7391-ALPHA}.`; got != want {
		t.Errorf("finalReply = %q, want %q", got, want)
	}
	if got := finalReply(unknownAnswer); !strings.Contains(got, `\boxed{unknown}`) {
		t.Errorf("finalReply(unknown) = %q, want \\boxed{unknown}", got)
	}
}

func TestFitBudget(t *testing.T) {
	byWords := func(s string) int { return len(strings.Fields(s)) }
	tests := []struct {
		name          string
		in            string
		budget        int
		count         counter
		want          string
		wantTruncated bool
	}{
		{"fits", "a b c", 3, byWords, "a b c", false},
		{"cut at a word", "a b c d", 2, byWords, "a b", true},
		{"not even one word", "abcdefgh", 1, approxCount, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, truncated := fitBudget(tt.in, tt.budget, tt.count)
			if got != tt.want || truncated != tt.wantTruncated {
				t.Errorf("fitBudget(%q, %d) = %q %v, want %q %v", tt.in, tt.budget, got, truncated, tt.want, tt.wantTruncated)
			}
		})
	}
}

// plantedDocument returns chunks of filler with the fact planted in chunk
// plant and distractors sharing a word or two with the question elsewhere.
func plantedDocument(chunks, plant int) []string {
	out := make([]string, chunks)
	for i := range out {
		var b strings.Builder
		for j := 0; j < 40; j++ {
			fmt.Fprintf(&b, "On day %d the valley weather stayed mild and the river ran slow. ", i*40+j)
			if j == 20 && i%3 == 0 {
				fmt.Fprintf(&b, "The south gate was repainted in chunk %d. ", i)
			}
			if j == 25 && i == plant {
				b.WriteString("The access code for the north gate is 7391-ALPHA. ")
			}
		}
		out[i] = b.String()
	}
	return out
}

func TestPlantedFactFoundAcrossChunks(t *testing.T) {
	const question = "What is the access code for the north gate?"
	for _, plant := range []int{0, 5, 11} {
		t.Run(fmt.Sprintf("planted in chunk %d", plant), func(t *testing.T) {
			const budget = 40
			memory := initialMemory
			for i, chunk := range plantedDocument(12, plant) {
				var truncated bool
				memory, truncated = updateMemory(question, memory, chunk, budget, approxCount)
				if n := approxCount(memory); n > budget || truncated {
					t.Fatalf("chunk %d: memory has %d tokens (truncated %v), want at most %d", i, n, truncated, budget)
				}
				if i >= plant && !strings.Contains(memory, "7391-ALPHA") {
					t.Fatalf("chunk %d: memory %q lost the planted fact", i, memory)
				}
			}
			prompt := fmt.Sprintf(testFinalTemplate, question, memory)
			p, err := parsePrompt(prompt)
			if err != nil {
				t.Fatalf("parsePrompt: %v", err)
			}
			if got := answerFrom(p.question, p.memory); got != "7391-ALPHA" {
				t.Errorf("answer = %q, want 7391-ALPHA (memory %q)", got, memory)
			}
		})
	}
}
