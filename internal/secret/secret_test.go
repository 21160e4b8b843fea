package secret

import "testing"

func TestURL(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"http://gpu-1:8000/v1", "http://gpu-1:8000/v1"},
		{"http://user:pw@gpu-1:8000/v1", "http://xxxxx@gpu-1:8000/v1"},
		{"http://sk-token@gpu-1:8000/v1", "http://xxxxx@gpu-1:8000/v1"},
		{"https://h/v1?api-key=k&x=1", "https://h/v1?api-key=xxxxx&x=xxxxx"},
		{"http://user:pw@[::1", "http://xxxxx@[::1"},
		{"", ""},
	} {
		t.Run(tt.in, func(t *testing.T) {
			if got := URL(tt.in); got != tt.want {
				t.Errorf("URL(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
	if got, want := URLs("http://a:b@h1/v1, http://h2/v1"), "http://xxxxx@h1/v1,http://h2/v1"; got != want {
		t.Errorf("URLs = %q, want %q", got, want)
	}
}

func TestString(t *testing.T) {
	if String("") != "" || String("k") != Marker {
		t.Errorf("String: an unset secret prints empty and a set one as %s", Marker)
	}
}
