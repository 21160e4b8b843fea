package contract

import (
	"reflect"
	"strings"
	"testing"
)

type checkInner struct {
	N    int      `json:"n" contract:"min=16,zero,max=100"`
	Temp *float32 `json:"temp,omitempty" contract:"min=0,max=2"`
}

type checkOuter struct {
	Name  string       `json:"name" contract:"maxlen=5"`
	Kind  string       `json:"kind,omitempty" contract:"enum=a|b"`
	Items []checkInner `json:"items" contract:"maxitems=2"`
	Opts  checkInner   `json:"opts"`
	Big   int64        `json:"big,omitempty" contract:"min=0,max=3600"`
}

func TestCheck(t *testing.T) {
	hot := float32(2.5)
	tests := []struct {
		name string
		in   checkOuter
		want string
	}{
		{"all within", checkOuter{Name: "abc", Kind: "a", Items: []checkInner{{N: 0}, {N: 16}}, Opts: checkInner{N: 100}}, ""},
		{"a string too long", checkOuter{Name: "abcdef"}, "name is 6 bytes, over the limit of 5: shorten name"},
		{"an enum", checkOuter{Kind: "c"}, `kind "c" must be one of a, b`},
		{"too many items", checkOuter{Items: make([]checkInner, 3)}, "items has 3 items, over the limit of 2"},
		{"nested below its minimum", checkOuter{Items: []checkInner{{N: 0}, {N: 3}}}, "items[1].n (3) must be at least 16: raise items[1].n"},
		{"nested over its maximum", checkOuter{Opts: checkInner{N: 101}}, "opts.n (101) must be at most 100: lower opts.n"},
		{"a pointer out of range", checkOuter{Opts: checkInner{Temp: &hot}}, "opts.temp (2.5) must be within [0, 2]"},
		{"a huge number", checkOuter{Big: 9300000000}, "big (9300000000) must be within [0, 3600]"},
		{"negative", checkOuter{Big: -1}, "big (-1) must be within [0, 3600]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(tt.in)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Check = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Check = %v, want %q", err, tt.want)
			}
		})
	}
	if err := CheckIn("options", checkInner{N: 5}); err == nil || !strings.HasPrefix(err.Error(), "options.n (5)") {
		t.Errorf("CheckIn = %v, want the path under options", err)
	}
}

func TestCheckTag(t *testing.T) {
	var nilInt *int
	five, f32 := 5, float32(0.1)
	tests := []struct {
		name string
		v    any
		tag  string
		want string
	}{
		{"no tag", 5, "", ""},
		{"nil pointer", nilInt, "min=1", ""},
		{"pointer", &five, "min=8", "(5) must be at least 8: raise %s"},
		{"max only", uint8(9), "max=8", "(9) must be at most 8: lower %s"},
		{"within", 5, "min=1,max=8", ""},
		{"range", 9, "min=1, max=8", "(9) must be within [1, 8]"},
		{"zero allowed", 0, "min=16,zero,max=100", ""},
		{"zero not allowed", 0, "min=16,max=100", "(0) must be within [16, 100]"},
		{"zero below range", 3, "zero,min=16,max=100", "(3) must be at least 16: raise %s"},
		{"float32 printed short", f32, "min=0.5", "(0.1) must be at least 0.5: raise %s"},
		{"bad number ignored", 5, "min=x,max=4", "(5) must be at most 4: lower %s"},
		{"maxlen", "abcdef", "maxlen=5", "is 6 bytes, over the limit of 5: shorten %s"},
		{"maxlen within", "abcde", "maxlen=5", ""},
		{"maxlen on a number", 123456, "maxlen=5", ""},
		{"maxitems", []int{1, 2, 3}, "maxitems=2", "has 3 items, over the limit of 2: split %s"},
		{"maxitems array", [3]int{}, "maxitems=3", ""},
		{"enum", "c", "enum=a|b", `"c" must be one of a, b: set %s to one of them`},
		{"enum empty", "", "enum=a|b", ""},
		{"enum member", "b", "enum=a|b", ""},
		{"a string has no range", "z", "min=1", ""},
		{"first failure wins", "abcdef", "maxlen=5,enum=a|b", "is 6 bytes, over the limit of 5: shorten %s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := checkTag(reflect.ValueOf(tt.v), tt.tag); got != tt.want {
				t.Errorf("checkTag(%v, %q) = %q, want %q", tt.v, tt.tag, got, tt.want)
			}
		})
	}
}
