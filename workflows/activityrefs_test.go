package workflows

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestActivitiesScheduledByReference: the workflows schedule every
// activity through its typed reference (actwire.Ref: UpdateMemory.
// Execute(ctx, in)), never by name with an untyped input, so that an input
// or output that is not the activity's fails to compile.
func TestActivitiesScheduledByReference(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	byName := regexp.MustCompile(`workflow\.Execute(Local)?Activity\(`)
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n++
		for i, line := range strings.Split(string(src), "\n") {
			if byName.MatchString(line) {
				t.Errorf("%s:%d schedules an activity by name: use its actwire.Ref (%s)", f, i+1, strings.TrimSpace(line))
			}
		}
	}
	if n < 10 {
		t.Fatalf("read %d workflow files, want the package's", n)
	}
}
