package workerapp

import (
	"testing"

	"github.com/memagent/memagent/plugin"
)

// TestDescribeKeys: the start-up log names the keys' count and the active
// key's id, never their material.
func TestDescribeKeys(t *testing.T) {
	for _, tt := range []struct {
		keys []plugin.CodecKey
		want string
	}{
		{nil, "none"},
		{[]plugin.CodecKey{{ID: "k2", Key: []byte("SECRET-material-32-bytes-long!!!")}, {ID: "k1"}}, `2 key(s), active "k2"`},
	} {
		if got := describeKeys(tt.keys); got != tt.want {
			t.Errorf("describeKeys(%d keys) = %q, want %q", len(tt.keys), got, tt.want)
		}
	}
}
