package buildinfo

import (
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
)

// version is the binary's version when the build stamps one:
//
//	go build -ldflags "-X github.com/memagent/memagent/internal/buildinfo.version=1.4.0" ./worker
var version string

// BinaryVersion is the version of the running binary: the one the build
// stamped (version), else the main module's version (a tagged `go
// install`), else the commit `go build` recorded from a clean checkout (its
// first 12 hex digits). It is "" for a build without any of them (`go
// run`, -buildvcs=false, a checkout with uncommitted changes): two such
// builds may hold different code, so nothing may take them for the same
// build. It is the worker's build id unless one is set (WorkerBuildID).
func BinaryVersion() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" && !strings.HasSuffix(v, "+dirty") {
		return v
	}
	var rev string
	for _, s := range bi.Settings {
		switch {
		case s.Key == "vcs.revision":
			rev = s.Value
		case s.Key == "vcs.modified" && s.Value == "true":
			return ""
		}
	}
	return rev[:min(12, len(rev))]
}

// CheckDeployment reports a Worker Deployment setting the Temporal server
// would refuse, or one that cannot be meant: name is the deployment's
// name, setBuildID the build id as set, buildID as it will be used (set or
// the binary's version). All empty is an unversioned worker.
func CheckDeployment(name, setBuildID, buildID string) error {
	switch {
	case name == "" && setBuildID != "":
		return fmt.Errorf("build id %q is set but no deployment name: set the deployment's name too to turn Worker Versioning on, or neither", setBuildID)
	case name == "":
		return nil
	case strings.ContainsAny(name, ".:"):
		return fmt.Errorf("deployment name %q: Temporal refuses '.' and ':' in it (use e.g. memagent or memagent-prod)", name)
	case strings.HasPrefix(name, "__"):
		return fmt.Errorf("deployment name %q: Temporal reserves names that start with __", name)
	case buildID == "":
		return errors.New("this binary carries no version to use as its build id (built by go run, with -buildvcs=false or from a checkout with changes): set the build id, e.g. to the image tag or the commit")
	case strings.HasPrefix(buildID, "__"):
		return fmt.Errorf("build id %q: Temporal reserves ids that start with __", buildID)
	case len(name) > 255 || len(buildID) > 255:
		return errors.New("deployment name and build id are at most 255 bytes each")
	}
	return nil
}
