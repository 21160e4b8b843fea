package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memagent/memagent/worker/config"
)

// binDir holds the binaries the tests build, once per test process.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "memagent-deploy-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// built builds a main package once per test process and returns the
// binary's path. dir is where go build runs (a module root), pkg the
// package in it.
func built(t *testing.T, once *sync.Once, path *string, buildErr *error, dir, pkg, name string) string {
	t.Helper()
	once.Do(func() {
		began := time.Now()
		out := filepath.Join(binDir, name)
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Dir = dir
		// The environment go test itself runs with, so the build reuses the
		// packages already compiled for the tests.
		cmd.Env = append(os.Environ(), "GOWORK=off")
		if b, err := cmd.CombinedOutput(); err != nil {
			*buildErr = fmt.Errorf("go build %s in %s: %v\n%s", pkg, dir, err, b)
			return
		}
		*path = out
		t.Logf("built %s in %s", name, time.Since(began).Round(100*time.Millisecond))
	})
	if *buildErr != nil {
		t.Fatal(*buildErr)
	}
	return *path
}

var (
	composeOnce sync.Once
	composeBin  string
	composeErr  error
)

// composecheck returns the compose checker, built from its own module
// (deploy/composecheck) with the Compose Specification's Go loader.
func composecheck(t *testing.T) string {
	if testing.Short() {
		t.Skip("builds the compose checker")
	}
	return built(t, &composeOnce, &composeBin, &composeErr, "composecheck", ".", "composecheck")
}

// composeProject is the part of a resolved compose project the tests read.
type composeProject struct {
	Name     string                    `json:"name"`
	Services map[string]composeService `json:"services"`
}

type composeService struct {
	Profiles  []string `json:"profiles"`
	Image     string   `json:"image"`
	Command   []string `json:"command"`
	DependsOn map[string]struct {
		Condition string `json:"condition"`
		Required  bool   `json:"required"`
	} `json:"depends_on"`
	Healthcheck *struct {
		Test    []string `json:"test"`
		Disable bool     `json:"disable"`
	} `json:"healthcheck"`
	Environment map[string]*string `json:"environment"`
	Volumes     []struct {
		Type     string `json:"type"`
		Source   string `json:"source"`
		Target   string `json:"target"`
		ReadOnly bool   `json:"read_only"`
	} `json:"volumes"`
	Networks map[string]*struct {
		Aliases []string `json:"aliases"`
	} `json:"networks"`
	StopGracePeriod string `json:"stop_grace_period"`
	Deploy          *struct {
		Resources struct {
			Reservations *struct {
				Devices []struct {
					Driver       string   `json:"driver"`
					Capabilities []string `json:"capabilities"`
				} `json:"devices"`
			} `json:"reservations"`
		} `json:"resources"`
	} `json:"deploy"`
}

// loadCompose runs the checker on the repository's compose file, as
// `docker compose --env-file ... [--profile P] config` would.
func loadCompose(t *testing.T, envFile string, profiles ...string) (composeProject, error) {
	t.Helper()
	// Read here too: go test's result cache then knows the test depends on
	// them (the checker reads them in another process).
	for _, f := range []string{"../docker-compose.yml", "../.env.example", "otel-collector.yaml"} {
		if _, err := os.ReadFile(f); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"-f", "../docker-compose.yml"}
	if envFile != "" {
		args = append(args, "--env-file", envFile)
	}
	for _, p := range profiles {
		args = append(args, "--profile", p)
	}
	cmd := exec.Command(composecheck(t), args...)
	// Not this process's environment: the file and the env file alone.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "COMPOSE_DISABLE_ENV_FILE=1"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return composeProject{}, fmt.Errorf("%v: %s", err, stderr.String())
	}
	var p composeProject
	if err := json.Unmarshal(stdout.Bytes(), &p); err != nil {
		t.Fatalf("composecheck output does not parse: %v", err)
	}
	return p, nil
}

// startOrder sorts the services so that each comes after those it depends
// on (ties by name), failing on a cycle: the order compose starts them in.
func startOrder(t *testing.T, p composeProject) []string {
	t.Helper()
	var order []string
	done := map[string]bool{}
	for len(order) < len(p.Services) {
		var ready []string
		for name, s := range p.Services {
			if done[name] {
				continue
			}
			ok := true
			for dep := range s.DependsOn {
				if _, active := p.Services[dep]; active && !done[dep] {
					ok = false
				}
			}
			if ok {
				ready = append(ready, name)
			}
		}
		if len(ready) == 0 {
			t.Fatalf("depends_on has a cycle among the services not yet started (started: %v)", order)
		}
		sort.Strings(ready)
		for _, name := range ready {
			done[name] = true
		}
		order = append(order, ready...)
	}
	return order
}

func TestComposeProfiles(t *testing.T) {
	common := []string{"jaeger", "otel-collector", "postgresql", "s3", "setup", "temporal", "temporal-schema", "temporal-ui", "worker"}
	tests := []struct {
		name     string
		profiles []string // nil: COMPOSE_PROFILES from .env.example
		model    string   // the service serving http://inference:8000/v1
	}{
		{"simulator", []string{"simulator"}, "simulator"},
		{"sim, the older name", []string{"sim"}, "simulator"},
		{"gpu from .env.example", nil, "vllm"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := loadCompose(t, "../.env.example", tt.profiles...)
			if err != nil {
				t.Fatalf("compose config: %v", err)
			}
			var names []string
			for n := range p.Services {
				names = append(names, n)
			}
			sort.Strings(names)
			want := slices.Sorted(slices.Values(append(slices.Clone(common), tt.model)))
			if !slices.Equal(names, want) {
				t.Fatalf("services = %v, want %v", names, want)
			}

			// Every dependency is on an active service, or optional; and a
			// wait for health is on a service that has a health check.
			for name, s := range p.Services {
				for dep, d := range s.DependsOn {
					target, active := p.Services[dep]
					if !active {
						if d.Required {
							t.Errorf("%s requires %s, which this profile does not start", name, dep)
						}
						continue
					}
					if d.Condition == "service_healthy" && (target.Healthcheck == nil || target.Healthcheck.Disable || len(target.Healthcheck.Test) == 0) {
						t.Errorf("%s waits for %s to be healthy, but %s has no health check", name, dep, dep)
					}
				}
			}

			w := p.Services["worker"]
			for dep, cond := range map[string]string{"setup": "service_completed_successfully", tt.model: "service_healthy", "s3": "service_started"} {
				if got := w.DependsOn[dep].Condition; got != cond {
					t.Errorf("worker depends on %s with %q, want %q", dep, got, cond)
				}
			}
			if got := p.Services["setup"].DependsOn["temporal"].Condition; got != "service_healthy" {
				t.Errorf("setup waits for temporal with %q, want service_healthy: search attributes need a running frontend", got)
			}
			if got := p.Services["temporal-schema"].DependsOn["postgresql"].Condition; got != "service_healthy" {
				t.Errorf("temporal-schema waits for postgresql with %q, want service_healthy", got)
			}
			if got := p.Services["temporal"].DependsOn["temporal-schema"].Condition; got != "service_completed_successfully" {
				t.Errorf("temporal waits for temporal-schema with %q, want service_completed_successfully: the server needs its schemas", got)
			}
			order := startOrder(t, p)
			pos := func(s string) int { return slices.Index(order, s) }
			for _, before := range [][2]string{{"postgresql", "temporal-schema"}, {"temporal-schema", "temporal"}, {"temporal", "setup"}, {"setup", "worker"}, {tt.model, "worker"}, {"s3", "worker"}, {"jaeger", "otel-collector"}} {
				if pos(before[0]) > pos(before[1]) {
					t.Errorf("start order %v: %s after %s", order, before[0], before[1])
				}
			}
			t.Logf("start order: %s", strings.Join(order, " → "))

			// The worker reaches the active profile's server under one name.
			aliases := p.Services[tt.model].Networks["default"]
			if aliases == nil || !slices.Contains(aliases.Aliases, "inference") {
				t.Errorf("%s has no network alias inference: %+v", tt.model, p.Services[tt.model].Networks)
			}

			// What the worker is given, config.Load accepts.
			env := map[string]string{}
			for k, v := range w.Environment {
				if v != nil {
					env[k] = *v
				}
			}
			cfg, err := config.FromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
			if err != nil {
				t.Fatalf("the worker's compose environment: %v", err)
			}
			cfg.Normalize()
			if err := cfg.Validate(); err != nil {
				t.Errorf("the worker's compose environment does not validate: %v", err)
			}
			if strings.Join(cfg.ModelURLs, ",") != "http://inference:8000/v1" || cfg.Model != "" {
				t.Errorf("worker model %q at %s, want the server's own model at http://inference:8000/v1", cfg.Model, cfg.ModelURLs)
			}
			if cfg.S3Endpoint != "http://s3:7070" || cfg.TemporalAddress != "temporal:7233" || cfg.HTTPAddr != "0.0.0.0:9464" {
				t.Errorf("worker reaches S3 %s, Temporal %s, serves %s", cfg.S3Endpoint, cfg.TemporalAddress, cfg.HTTPAddr)
			}
			grace, err := time.ParseDuration(w.StopGracePeriod)
			if err != nil || grace <= cfg.WorkerStopTimeout() {
				t.Errorf("worker stop_grace_period %q is not above its stop timeout %v: Docker would kill in-flight calls", w.StopGracePeriod, cfg.WorkerStopTimeout())
			}
			if tt.model == "vllm" {
				devs := p.Services["vllm"].Deploy
				if devs == nil || devs.Resources.Reservations == nil || len(devs.Resources.Reservations.Devices) != 1 ||
					devs.Resources.Reservations.Devices[0].Driver != "nvidia" || !slices.Contains(devs.Resources.Reservations.Devices[0].Capabilities, "gpu") {
					t.Errorf("vllm reserves no NVIDIA GPU: %+v", devs)
				}
			}
		})
	}
}

// TestComposeNeedsItsSecrets checks that without an env file the check
// fails naming the variables to set, as docker compose would.
func TestComposeNeedsItsSecrets(t *testing.T) {
	_, err := loadCompose(t, "")
	if err == nil {
		t.Fatal("compose config without an env file succeeded; it must require the S3 and PostgreSQL secrets")
	}
	for _, want := range []string{"set S3_SECRET_KEY in .env", "set POSTGRES_PASSWORD in .env"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// TestComposeCheckerCatchesMistakes makes sure the checker is not a
// rubber stamp: a misspelt key and a dependency on a missing service fail.
func TestComposeCheckerCatchesMistakes(t *testing.T) {
	orig, err := os.ReadFile("../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	env, err := os.ReadFile("../.env.example")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, from, to, want string }{
		{"misspelt key", "    healthcheck:\n      test: [\"CMD-SHELL\", \"pg_isready", "    healtcheck:\n      test: [\"CMD-SHELL\", \"pg_isready", "healtcheck"},
		{"unknown dependency", "      setup:\n        condition: service_completed_successfully", "      setupp:\n        condition: service_completed_successfully", "setupp"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !bytes.Contains(orig, []byte(tt.from)) {
				t.Fatalf("docker-compose.yml no longer contains %q; update this test", tt.from)
			}
			dir := t.TempDir()
			bad := filepath.Join(dir, "docker-compose.yml")
			if err := os.WriteFile(bad, bytes.Replace(orig, []byte(tt.from), []byte(tt.to), 1), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, ".env"), env, 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(composecheck(t), "-f", bad, "--env-file", filepath.Join(dir, ".env"), "--profile", "simulator")
			out, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), tt.want) {
				t.Errorf("checker on a compose file with a %s: err %v, output %s; want a failure naming %q", tt.name, err, out, tt.want)
			}
		})
	}
}
