package charts

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/memagent/memagent/internal/buildinfo"
	"github.com/memagent/memagent/worker/config"
)

// TestRenderVersioned: with versioning on, each build runs as a
// Deployment of its own (named and labelled after its build id, its own
// selector, its own image and replicas) whose workers the worker's own
// configuration loader reads as that build of the Worker Deployment;
// everything else (ConfigMap, Service, PDB) stays one and covers every
// build; an HPA scales each build; and the notes say which build to make
// current. Without it the chart renders what it did before (the
// Deployment has no build label and no versioning variables).
func TestRenderVersioned(t *testing.T) {
	digest := "sha256:" + strings.Repeat("cd", 32)
	objs := mustRender(t, "--set", "versioning.deploymentName=memagent",
		"--set", "versioning.builds[0].buildId=0.4.0,versioning.builds[0].tag=0.4.0,versioning.builds[0].replicas=1",
		"--set", "versioning.builds[1].buildId=0.5.0+rc_1,versioning.builds[1].digest="+digest)
	type want struct{ name, label, image, build string }
	wants := []want{
		{"t-memagent-0.4.0", "0.4.0", "ghcr.io/memagent/memagent:0.4.0", "0.4.0"},
		{"t-memagent-0.5.0-rc-1", "0.5.0-rc-1", "ghcr.io/memagent/memagent@" + digest, "0.5.0+rc_1"},
	}
	var deps []obj
	for _, o := range objs {
		if o.kind() == "Deployment" {
			deps = append(deps, o)
		}
	}
	if len(deps) != len(wants) {
		t.Fatalf("%d Deployments, want one per build (%d)", len(deps), len(wants))
	}
	for i, w := range wants {
		d := deps[i]
		if d.name() != w.name {
			t.Errorf("Deployment %d is %s, want %s", i, d.name(), w.name)
		}
		for _, path := range [][]any{{"metadata", "labels"}, {"spec", "selector", "matchLabels"}, {"spec", "template", "metadata", "labels"}} {
			if got := dig(map[string]any(d), path...); dig(got, "memagent.io/build-id") != w.label {
				t.Errorf("%s %v: build label %v, want %s", w.name, path, dig(got, "memagent.io/build-id"), w.label)
			}
		}
		if got := dig(d, "spec", "template", "spec", "topologySpreadConstraints", 0, "labelSelector", "matchLabels", "memagent.io/build-id"); got != w.label {
			t.Errorf("%s spreads pods of build %v, want its own", w.name, got)
		}
		c := dig(d, "spec", "template", "spec", "containers", 0).(map[string]any)
		if c["image"] != w.image {
			t.Errorf("%s runs %v, want %s", w.name, c["image"], w.image)
		}
		// The worker's own loader reads this pod's environment.
		env := workerEnv(t, []obj{find(t, objs, "ConfigMap"), d})
		cfg, err := config.FromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
		if err != nil {
			t.Fatal(err)
		}
		if cfg.DeploymentName != "memagent" || cfg.WorkerBuildID() != w.build {
			t.Errorf("%s: the worker reads deployment %q build %q, want memagent %s", w.name, cfg.DeploymentName, cfg.WorkerBuildID(), w.build)
		}
		if err := buildinfo.CheckDeployment(cfg.DeploymentName, cfg.BuildID, cfg.WorkerBuildID()); err != nil {
			t.Errorf("%s: %v", w.name, err)
		}
	}
	if r := []any{dig(deps[0], "spec", "replicas"), dig(deps[1], "spec", "replicas")}; fmt.Sprint(r) != "[1 2]" {
		t.Errorf("replicas %v, want 1 (the build's) and 2 (replicaCount)", r)
	}
	for _, kind := range []string{"ConfigMap", "Service", "PodDisruptionBudget", "ServiceAccount"} {
		o := find(t, objs, kind) // exactly one each
		if kind == "PodDisruptionBudget" || kind == "Service" {
			sel := dig(o, "spec", "selector")
			if kind == "PodDisruptionBudget" {
				sel = dig(sel, "matchLabels")
			}
			if dig(sel, "memagent.io/build-id") != nil {
				t.Errorf("the %s selects one build: %v", kind, sel)
			}
		}
	}

	t.Run("HPA per build", func(t *testing.T) {
		objs := mustRender(t, "--set", "versioning.deploymentName=memagent,autoscaling.enabled=true",
			"--set", "versioning.builds[0].buildId=a,versioning.builds[1].buildId=b")
		var targets []any
		for _, o := range objs {
			if o.kind() == "HorizontalPodAutoscaler" {
				targets = append(targets, dig(o, "spec", "scaleTargetRef", "name"))
			}
		}
		if !reflect.DeepEqual(targets, []any{"t-memagent-a", "t-memagent-b"}) {
			t.Errorf("HPAs scale %v, want each build's Deployment", targets)
		}
	})

	t.Run("notes", func(t *testing.T) {
		notes := renderNotes(t, "--set", "versioning.deploymentName=memagent",
			"--set", "versioning.builds[0].buildId=a,versioning.builds[1].buildId=b")
		for _, s := range []string{"set-current-version --deployment-name memagent --build-id b", "deployment/t-memagent-a", "deployment/t-memagent-b"} {
			if !strings.Contains(notes, s) {
				t.Errorf("NOTES lack %q:\n%s", s, notes)
			}
		}
	})

	t.Run("off", func(t *testing.T) {
		objs := mustRender(t)
		d := find(t, objs, "Deployment")
		env := envOf(container(t, objs))
		if d.name() != "t-memagent" || dig(d, "spec", "selector", "matchLabels", "memagent.io/build-id") != nil || env["TEMPORAL_DEPLOYMENT_NAME"] != nil {
			t.Errorf("unversioned: Deployment %s, selector %v, TEMPORAL_DEPLOYMENT_NAME %v; want t-memagent, no build, unset",
				d.name(), dig(d, "spec", "selector", "matchLabels"), env["TEMPORAL_DEPLOYMENT_NAME"])
		}
	})

	t.Run("rejected", func(t *testing.T) {
		for _, tt := range []struct {
			name string
			args []string
			want string
		}{
			{"name without builds", []string{"--set", "versioning.deploymentName=memagent"}, "versioning.builds is empty"},
			{"builds without a name", []string{"--set", "versioning.builds[0].buildId=a"}, "versioning.deploymentName is empty"},
			{"a dot in the name", []string{"--set", "versioning.deploymentName=mem.agent,versioning.builds[0].buildId=a"}, "/versioning/deploymentName"},
			{"a reserved build id", []string{"--set", "versioning.deploymentName=m,versioning.builds[0].buildId=__a"}, "/versioning/builds/0/buildId"},
			{"two builds, one Deployment", []string{"--set", "versioning.deploymentName=m,versioning.builds[0].buildId=A,versioning.builds[1].buildId=a"}, "name the same Deployment"},
			{"KEDA", []string{"--set", "versioning.deploymentName=m,versioning.builds[0].buildId=a,keda.enabled=true"}, "one ScaledObject per build"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				if _, err := render(t, tt.args...); err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("helm template %v: %v, want an error containing %q", tt.args, err, tt.want)
				}
			})
		}
	})
}
