package review

import (
	"context"
	"testing"
	"time"

	"github.com/memagent/memagent/starter/cli/e2e/desktest"
)

// newBrowser starts chromium in a window 1500 pixels wide and height
// high, whose waits report says and last up to 90 seconds.
func newBrowser(t *testing.T, ctx context.Context, chromium string, height int, says string) *desktest.Browser {
	t.Helper()
	return desktest.NewBrowser(t, ctx, chromium, height, says, 90*time.Second)
}
