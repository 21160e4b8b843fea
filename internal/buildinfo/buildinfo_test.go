package buildinfo

import (
	"cmp"
	"strings"
	"testing"
)

// TestDeployment: the build id is the one set, else the binary's stamped
// version; what Temporal would refuse, a build id without a deployment, or
// a versioned worker with no build id at all is an error saying so.
func TestDeployment(t *testing.T) {
	tests := []struct {
		name, deployment, setBuildID string
		version                      string // the stamped binary version
		wantBuild, wantErr           string
	}{
		{"off", "", "", "", "", ""},
		{"off, with a binary version", "", "", "1.3.0", "1.3.0", ""},
		{"set", "memagent", "1.4.0", "", "1.4.0", ""},
		{"build id wins over the binary's", "memagent", "b2", "1.3.0", "b2", ""},
		{"binary's version", "memagent", "", "1.3.0", "1.3.0", ""},
		{"no version at all", "memagent", "", "", "", "carries no version"},
		{"build id alone", "", "1.4.0", "", "1.4.0", "no deployment name"},
		{"dot in the name", "memagent.prod", "1", "", "1", "'.' and ':'"},
		{"colon in the name", "memagent:prod", "1", "", "1", "'.' and ':'"},
		{"reserved name", "__memagent", "1", "", "1", "reserves"},
		{"reserved build id", "memagent", "__x", "", "__x", "reserves"},
		{"too long", "memagent", strings.Repeat("b", 256), "", strings.Repeat("b", 256), "at most 255"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func(v string) { version = v }(version)
			version = tt.version
			if v := BinaryVersion(); tt.version == "" && v != "" {
				t.Fatalf("the test binary carries version %q of its own: the cases without one cannot run", v)
			}
			build := cmp.Or(tt.setBuildID, BinaryVersion())
			if build != tt.wantBuild {
				t.Errorf("build id = %q, want %q", build, tt.wantBuild)
			}
			err := CheckDeployment(tt.deployment, tt.setBuildID, build)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("CheckDeployment() = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("CheckDeployment() = %v, want an error saying %q", err, tt.wantErr)
			}
		})
	}
}
