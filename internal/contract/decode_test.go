package contract

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

type opts struct {
	ChunkTokens int      `json:"chunk_tokens,omitempty"`
	Temperature *float32 `json:"temperature,omitempty"`
	Model       string   `json:"model,omitempty"`
}

type question struct {
	ID          string   `json:"id,omitempty"`
	Question    string   `json:"question" contract:"required"`
	GoldAnswers []string `json:"gold_answers,omitempty" contract:"alias=answers"`
}

type input struct {
	Document  string            `json:"document"`
	Questions []question        `json:"questions"`
	Options   opts              `json:"options"`
	Labels    map[string]string `json:"labels,omitempty"`
	Since     time.Time         `json:"since"`
	Extra     json.RawMessage   `json:"extra,omitempty"`
	Flag      bool              `json:"flag,omitempty"`
	Small     int8              `json:"small,omitempty"`
	hidden    int
}

func TestDecode(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string // substrings of the error, in order; none means success
	}{
		{"ok", `{"document":"s3://b/k","questions":[{"question":"Who?","answers":["A"]}],"options":{"chunk_tokens":1000,"temperature":0.5},"since":"2026-01-02T15:04:05Z","extra":{"any":[1]}}`, nil},
		{"null leaves defaults", `{"options":null,"questions":null}`, nil},
		{"typo", `{"options":{"chunk_token":1000}}`, []string{"options.chunk_token: unknown field; did you mean options.chunk_tokens?"}},
		{"case", `{"Document":"x"}`, []string{"Document: unknown field; did you mean document?"}},
		{"far off", `{"colour":"red"}`, []string{`colour: unknown field; the input has {"document", "questions"`}},
		{"wrong type", `{"options":{"chunk_tokens":"1000"}}`, []string{`options.chunk_tokens: expected an integer, got a string ("1000")`}},
		{"fraction", `{"options":{"chunk_tokens":1.5}}`, []string{"options.chunk_tokens: expected an integer, got 1.5"}},
		{"integral number", `{"options":{"chunk_tokens":5e2},"small":100.0}`, nil},
		{"null alias beside its name", `{"questions":[{"question":"q","answers":null,"gold_answers":["b"]},{"question":"q","answers":["a"],"gold_answers":null}]}`, nil},
		{"overflow", `{"small":300}`, []string{"small: expected an integer that fits in 8 bits, got 300"}},
		{"strings for objects", `{"questions":["Who?","What?"]}`, []string{`questions[0]: expected an object {"id", "question", "gold_answers"}, got a string ("Who?")`, "questions[1]"}},
		{"both alias and name", `{"questions":[{"question":"q","answers":["a"],"gold_answers":["b"]}]}`, []string{"questions[0].answers: answers is an alias of questions[0].gold_answers"}},
		{"bad time", `{"since":"yesterday"}`, []string{"since: expected an RFC 3339 time"}},
		{"map values", `{"labels":{"a":1}}`, []string{"labels.a: expected a string, got a number (1)"}},
		{"not an object", `["x"]`, []string{`expected an object {"document"`}},
		{"not json", `{"document":`, []string{"not valid JSON"}},
		{"trailing", `{} {}`, []string{"not one JSON value"}},
		{"bool", `{"flag":"yes"}`, []string{`flag: expected true or false, got a string ("yes")`}},
		{"long string not echoed", `{"flag":"` + strings.Repeat("x", 100) + `"}`, []string{"flag: expected true or false, got a string of 100 bytes"}},
		{"unexported is unknown", `{"hidden":1}`, []string{"hidden: unknown field"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got input
			err := Decode([]byte(tt.in), &got)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Decode: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Decode succeeded, want an error with %q", tt.want)
			}
			msg, at := err.Error(), 0
			for _, w := range tt.want {
				i := strings.Index(msg[at:], w)
				if i < 0 {
					t.Fatalf("error %q\nlacks %q (after byte %d)", msg, w, at)
				}
				at += i + len(w)
			}
		})
	}
}

func TestDecodeFillsLikeEncodingJSON(t *testing.T) {
	in := `{"document":"s3://b/k","questions":[{"id":"q1","question":"Who?","answers":["A","B"]},{"question":"Q","answers":["C"],"gold_answers":null}],"options":{"chunk_tokens":1000.0,"temperature":0.5},"labels":{"k":"v"},"since":"2026-01-02T15:04:05.5Z","extra":{"x":[1,2]},"flag":true}`
	var got input
	if err := Decode([]byte(in), &got); err != nil {
		t.Fatal(err)
	}
	temp := float32(0.5)
	want := input{Document: "s3://b/k", Questions: []question{{ID: "q1", Question: "Who?", GoldAnswers: []string{"A", "B"}}, {Question: "Q", GoldAnswers: []string{"C"}}},
		Options: opts{ChunkTokens: 1000, Temperature: &temp}, Labels: map[string]string{"k": "v"},
		Since: time.Date(2026, 1, 2, 15, 4, 5, 5e8, time.UTC), Extra: json.RawMessage(`{"x":[1,2]}`), Flag: true}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}

func TestDecodeCapsProblems(t *testing.T) {
	var b strings.Builder
	b.WriteString("{")
	for i := range 20 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"zz` + strings.Repeat("q", i) + `":1`)
	}
	b.WriteString("}")
	var got input
	err := Decode([]byte(b.String()), &got)
	var fe FieldErrors
	if !asFieldErrors(err, &fe) || len(fe) != MaxProblems {
		t.Fatalf("got %d problems (%v), want %d", len(fe), err, MaxProblems)
	}
}

func asFieldErrors(err error, fe *FieldErrors) bool {
	v, ok := err.(FieldErrors)
	*fe = v
	return ok
}

func TestNearest(t *testing.T) {
	fields := Fields(reflect.TypeFor[input]())
	for _, tt := range []struct{ in, want string }{
		{"documnet", "document"}, {"question", "questions"}, {"OPTIONS", "options"}, {"label", "labels"}, {"xyz", ""},
	} {
		if got := nearest(tt.in, fields); got != tt.want {
			t.Errorf("nearest(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

type level int

func (l *level) UnmarshalJSON(b []byte) error { *l = level(len(b)); return nil }

// kinds has one field of each kind the checker treats apart, so that the
// exact message for each wrong value is pinned.
type kinds struct {
	Count  uint16             `json:"count,omitempty"`
	Ratio  float32            `json:"ratio,omitempty"`
	Blob   []byte             `json:"blob,omitempty"`
	Pair   [2]string          `json:"pair,omitempty"`
	Tags   map[string][]int64 `json:"tags,omitempty"`
	At     *time.Time         `json:"at,omitempty"`
	Level  level              `json:"level,omitempty"`
	Any    any                `json:"any,omitempty"`
	Nested *opts              `json:"nested,omitempty"`
}

func TestDecodeEachKind(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"uint ok", `{"count":65535}`, ""},
		{"uint negative", `{"count":-1}`, "count: expected a non-negative integer that fits in 16 bits, got -1"},
		{"uint string", `{"count":"1"}`, `count: expected a non-negative integer, got a string ("1")`},
		{"float ok", `{"ratio":1e3}`, ""},
		{"float out of range", `{"ratio":1e40}`, "ratio: expected a number within range, got 1e40"},
		{"float bool", `{"ratio":true}`, "ratio: expected a number, got a boolean (true)"},
		{"bytes ok", `{"blob":"aGk="}`, ""},
		{"bytes array", `{"blob":[1]}`, "blob: expected a base64 string, got an array"},
		{"array ok", `{"pair":["a","b"]}`, ""},
		{"array item", `{"pair":["a",2]}`, "pair[1]: expected a string, got a number (2)"},
		{"array object", `{"pair":{}}`, "pair: expected an array of strings, got an object"},
		{"map not object", `{"tags":[1]}`, "tags: expected an object, got an array"},
		{"map nested", `{"tags":{"b":[1,"x"],"a":[2.5]}}`, `tags.a[0]: expected an integer, got 2.5; tags.b[1]: expected an integer, got a string ("x")`},
		{"time number", `{"at":5}`, "at: expected an RFC 3339 time string, got a number (5)"},
		{"time null", `{"at":null}`, ""},
		{"unmarshaler any shape", `{"level":[1,2]}`, ""},
		{"interface any shape", `{"any":{"x":[null]}}`, ""},
		{"pointer to struct", `{"nested":{"chunk_tokens":"x"}}`, `nested.chunk_tokens: expected an integer, got a string ("x")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got kinds
			err := Decode([]byte(tt.in), &got)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Decode(%s): %v", tt.in, err)
				}
				return
			}
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Decode(%s) = %v\nwant %s", tt.in, err, tt.want)
			}
		})
	}
}

func TestDecodeNormalisesIntegers(t *testing.T) {
	var got input
	if err := Decode([]byte(`{"options":{"chunk_tokens":5e2},"small":-1.0E1}`), &got); err != nil {
		t.Fatal(err)
	}
	if got.Options.ChunkTokens != 500 || got.Small != -10 {
		t.Fatalf("got chunk_tokens %d, small %d; want 500, -10", got.Options.ChunkTokens, got.Small)
	}
}
