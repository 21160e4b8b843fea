package activities

// What the external tests (package activities_test, which may start the
// embedded stack) see of the package's internals.

// WorkerAreaPrefixes are the prefixes of workerAreas.
func WorkerAreaPrefixes() []string {
	var out []string
	for _, ar := range workerAreas {
		out = append(out, ar.Prefix)
	}
	return out
}

// AreaOfKey is the prefix of the worker's area a key of its bucket is in,
// "" for none.
func AreaOfKey(key string) string {
	a := &Activities{Bucket: "b"}
	if ar := a.areaOf("s3://b/" + key); ar != nil {
		return ar.Prefix
	}
	return ""
}
