package docconv_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memagent/memagent/internal/docconv"
	"github.com/memagent/memagent/internal/testdeps"
)

// pythonEmailData is the directory of the sample messages Debian's
// Python test suite ships (libpython3.11-testsuite), which nobody here
// wrote: Barry Warsaw's and others' messages, real and edge-case, with
// MIME, encodings and charsets of many mailers.
func pythonEmailData(t *testing.T) string {
	t.Helper()
	rel := "usr/lib/python3.11/test/test_email/data/msg_01.txt"
	return filepath.Dir(testdeps.Manual(t, "libpython3.11-testsuite", rel))
}

func TestEmailDump(t *testing.T) {
	if os.Getenv("EMAIL_DUMP") == "" {
		t.Skip()
	}
	dir := pythonEmailData(t)
	files, _ := filepath.Glob(filepath.Join(dir, "msg_*.txt"))
	for _, f := range files {
		head := make([]byte, docconv.SniffBytes)
		fh, _ := os.Open(f)
		n, _ := fh.Read(head)
		fh.Close()
		format := docconv.Detect(head[:n])
		var out bytes.Buffer
		res, err := converter(t).Convert(context.Background(), format, f, &out, nil)
		fmt.Printf("==== %s %s err=%v\n", filepath.Base(f), format, err)
		if err == nil {
			fmt.Println(out.String())
			for _, s := range res.Map.Spans {
				fmt.Printf("  span %d %q\n", s.Number, s.Label)
			}
			for _, m := range res.Map.Email.Messages {
				fmt.Printf("  msg %+v\n", m)
			}
		}
	}
	_ = strings.TrimSpace
}
