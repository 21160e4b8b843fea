package deploy

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/memagent/memagent/internal/testdeps"
)

// bare runs deploy/bare/run.sh in one of its print modes and returns its
// lines.
func bare(t *testing.T, mode, service string) []string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the compose checker")
	}
	testdeps.Command(t, "jq", "apt-get install jq")
	cmd := exec.Command("bash", "bare/run.sh", mode, service)
	// The env file the compose tests use, and a cache of this test's own.
	cmd.Env = append(os.Environ(), "MEMAGENT_BARE_ENV_FILE=.env.example", "MEMAGENT_BARE_CACHE="+filepath.Join(binDir, "bare"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("run.sh %s %s: %v\n%s", mode, service, err, stderr.String())
	}
	return strings.Split(strings.TrimRight(string(out), "\n"), "\n")
}

// loopback reports whether s names this host: 127.0.0.1 alone or as the
// host of host:port, of a URL, or a port of its own.
var loopback = regexp.MustCompile(`^(https?://)?127\.0\.0\.1(:\d+)?(/.*)?$|^\d+$`)

// TestBareUsesTheComposeEnvironment checks that run.sh gives each process
// the environment docker-compose.yml gives its container: the same keys
// with the same values, except that an address of another service or of
// every interface becomes one on loopback, a mounted file the file in this
// checkout, and the OpenTelemetry collector (not run here) is left out.
func TestBareUsesTheComposeEnvironment(t *testing.T) {
	p, err := loadCompose(t, "../.env.example", "simulator", "cli")
	if err != nil {
		t.Fatal(err)
	}
	hosts := regexp.MustCompile(`^(postgresql|0\.0\.0\.0)$|(^|//)(postgresql|temporal|s3|inference|0\.0\.0\.0):\d+|^5432$`)
	for _, service := range []string{"postgresql", "temporal-schema", "temporal", "setup", "worker", "starter"} {
		t.Run(service, func(t *testing.T) {
			got := map[string]string{}
			for _, line := range bare(t, "--print-env", service) {
				k, v, _ := strings.Cut(line, "=")
				got[k] = v
			}
			for k, v := range p.Services[service].Environment {
				want := ""
				if v != nil {
					want = *v
				}
				b, ok := got[k]
				switch {
				case k == "OTEL_EXPORTER_OTLP_ENDPOINT":
					if ok {
						t.Errorf("%s=%q: without MEMAGENT_BARE_OTLP no collector runs, the key must be left out", k, b)
					}
				case !ok:
					t.Errorf("run.sh gives %s no %s (compose: %q)", service, k, want)
				case hosts.MatchString(want):
					if !loopback.MatchString(b) || b == want && want != "127.0.0.1" {
						t.Errorf("%s: compose %q, run.sh %q; want the same service on loopback", k, want, b)
					}
				case strings.HasPrefix(want, "/etc/temporal/config/"):
					if src := mountOf(p.Services[service], want); src == "" || b != filepath.Join(mustAbs(t, ".."), src) {
						t.Errorf("%s: compose %q (mounted from %q), run.sh %q; want the mounted file", k, want, src, b)
					}
				case strings.HasPrefix(want, "/etc/temporal/schema"):
					if !strings.HasSuffix(b, "/go.temporal.io/server@"+goModVersion(t, "go.temporal.io/server")+strings.TrimPrefix(want, "/etc/temporal")) {
						t.Errorf("%s: compose %q, run.sh %q; want the server module's schema", k, want, b)
					}
				case b != want:
					t.Errorf("%s: compose %q, run.sh %q", k, want, b)
				}
			}
			for k, v := range got {
				if _, ok := p.Services[service].Environment[k]; !ok && !(service == "temporal" && strings.HasSuffix(k, "_PORT") && loopback.MatchString(v)) {
					t.Errorf("run.sh adds %s=%q, which compose does not set", k, v)
				}
			}
		})
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestBareUsesTheComposeDynamicConfig checks that the server run.sh starts
// reads the very file compose mounts into temporalio/server.
func TestBareUsesTheComposeDynamicConfig(t *testing.T) {
	p, err := loadCompose(t, "../.env.example", "simulator")
	if err != nil {
		t.Fatal(err)
	}
	s := p.Services["temporal"]
	src := mountOf(s, *s.Environment["DYNAMIC_CONFIG_FILE_PATH"])
	want := filepath.Join(mustAbs(t, ".."), src)
	for _, line := range bare(t, "--print-env", "temporal") {
		if v, ok := strings.CutPrefix(line, "DYNAMIC_CONFIG_FILE_PATH="); ok {
			if v != want {
				t.Errorf("run.sh's server reads %s, compose's %s", v, want)
			}
			return
		}
	}
	t.Error("run.sh gives the server no DYNAMIC_CONFIG_FILE_PATH")
}

// TestBareRunsTheComposeCommands checks that each process run.sh starts is
// the compose service's command, with memagent's binaries built here and
// addresses on loopback.
func TestBareRunsTheComposeCommands(t *testing.T) {
	p, err := loadCompose(t, "../.env.example", "simulator")
	if err != nil {
		t.Fatal(err)
	}
	for _, service := range []string{"temporal-schema", "s3", "simulator", "setup", "worker"} {
		t.Run(service, func(t *testing.T) {
			got := bare(t, "--print-command", service)
			want := p.Services[service].Command
			if len(got) != len(want) {
				t.Fatalf("run.sh runs %q, compose %q", got, want)
			}
			for i := range want {
				g, w := got[i], want[i]
				switch {
				case g == w:
				case w == "/starter" || w == "/worker" || w == "/devstack":
					if filepath.Base(g) != w[1:] {
						t.Errorf("argument %d: %q for %q", i, g, w)
					}
				case mountOf(p.Services[service], w) != "":
					if !strings.HasSuffix(g, strings.TrimPrefix(mountOf(p.Services[service], w), ".")) {
						t.Errorf("argument %d: %q for the mounted %q", i, g, w)
					}
				case w == "/data" && service == "s3":
					// The named volume: a directory of the run's own.
				default:
					host, port, err := net.SplitHostPort(g)
					_, wport, _ := net.SplitHostPort(w)
					if err != nil || host != "127.0.0.1" || wport == "" || port == "" {
						t.Errorf("argument %d: %q for %q; want the same listener on loopback", i, g, w)
					}
				}
			}
		})
	}
}
