// Package buildinfo says which build of memagent is running (the version a
// build stamped, a tagged install's, or a clean checkout's commit) and
// checks a Worker Deployment name and build id before a worker polls.
//
// It is a leaf: it imports nothing of memagent's, so that both the
// configuration and the plugin can use it.
package buildinfo
