package memagent

import (
	"strings"
	"testing"
)

func TestExtractAnswer(t *testing.T) {
	tests := []struct {
		name       string
		completion string
		want       Answer
	}{
		{"boxed", `So the city is \boxed{Athens}.`, Answer{"Athens", true, MethodBoxed}},
		{"boxed trimmed", "\\boxed{  Athens \n}", Answer{"Athens", true, MethodBoxed}},
		{"last boxed wins", `\boxed{Paris} no wait, \boxed{Athens}`, Answer{"Athens", true, MethodBoxed}},
		{"nested braces", `\boxed{\frac{1}{2}}`, Answer{`\frac{1}{2}`, true, MethodBoxed}},
		{"deeply nested", `\boxed{a{b{c}d}e}`, Answer{"a{b{c}d}e", true, MethodBoxed}},
		{"escaped braces", `\boxed{\{1, 2\}}`, Answer{`\{1, 2\}`, true, MethodBoxed}},
		{"unclosed last falls back to earlier", `\boxed{Athens} and then \boxed{Par`, Answer{"Athens", true, MethodBoxed}},
		{"unclosed falls back to answer is", `The answer is Athens. \boxed{Ath`, Answer{`Athens. \boxed{Ath`, true, MethodAnswerIs}},
		{"empty box skipped", `\boxed{Athens} \boxed{ }`, Answer{"Athens", true, MethodBoxed}},
		{"box inside box", `\boxed{\boxed{42}}`, Answer{"42", true, MethodBoxed}},
		{"think: only after last", `<think>maybe \boxed{Paris}</think>\boxed{Athens}`, Answer{"Athens", true, MethodBoxed}},
		{"think: boxed only inside", `<think>maybe \boxed{Paris}</think>I am not sure.`, Answer{}},
		{"think: two closings", `</think>\boxed{A}</think> the answer is B.`, Answer{"B", true, MethodAnswerIs}},
		{"answer is", "Reasoning...\nThe answer is Athens.", Answer{"Athens", true, MethodAnswerIs}},
		{"answer is case-insensitive", "THE ANSWER IS: Athens", Answer{"Athens", true, MethodAnswerIs}},
		{"answer is last occurrence", "the answer is Paris? No, the answer is Athens.", Answer{"Athens", true, MethodAnswerIs}},
		{"answer is one period only", "the answer is e.g...", Answer{"e.g..", true, MethodAnswerIs}},
		{"answer is rest of line", "The answer is Athens.\nBecause it was 1896.", Answer{"Athens", true, MethodAnswerIs}},
		{"answer is empty", "the answer is .", Answer{}},
		{"nothing", "I could not find it.", Answer{}},
		{"empty", "", Answer{}},
		{"unicode", `\boxed{東京}`, Answer{"東京", true, MethodBoxed}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ExtractAnswer(tt.completion); got != tt.want {
				t.Errorf("ExtractAnswer(%q) = %+v, want %+v", tt.completion, got, tt.want)
			}
		})
	}
}

func FuzzExtractAnswer(f *testing.F) {
	for _, s := range []string{
		`\boxed{x}`, `\boxed{\frac{1}{2}}`, `\boxed{`, `\boxed{\}`, `</think>the answer is 4.`,
		"The Answer Is", `\boxed{a}\boxed{`, "\xff\\boxed{\xfe}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a := ExtractAnswer(s)
		if a.Found != (a.Method != "") || a.Found != (a.Text != "") {
			t.Fatalf("inconsistent answer %+v", a)
		}
		if a.Text != strings.TrimSpace(a.Text) {
			t.Fatalf("answer %q is not trimmed", a.Text)
		}
		if a.Found && !strings.Contains(s, a.Text) {
			t.Fatalf("answer %q is not part of the completion", a.Text)
		}
	})
}
