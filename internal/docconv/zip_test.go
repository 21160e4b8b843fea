package docconv_test

import (
	"archive/zip"
	"io"
	"sort"
)

// newZip writes a zip of the given parts to w.
func newZip(w io.Writer, parts map[string]string) error {
	zw := zip.NewWriter(w)
	names := make([]string, 0, len(parts))
	for n := range parts {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		f, err := zw.Create(n)
		if err != nil {
			return err
		}
		if _, err := f.Write([]byte(parts[n])); err != nil {
			return err
		}
	}
	return zw.Close()
}
