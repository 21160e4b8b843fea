package charts

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/memagent/memagent/worker/config"
)

// helmVersion is the Helm CLI the tests build from the module proxy: the
// newest v3 that builds with the repository's Go. The chart itself needs
// any Helm 3.
const helmVersion = "v3.22.0"

// helmLDFlags stamp the version and the Kubernetes version Helm assumes
// (its client-go's, 1.37 here) as Helm's own release builds do; without
// them `helm template` assumes Kubernetes 1.20.
const helmLDFlags = "-s -w -X helm.sh/helm/v3/internal/version.version=" + helmVersion +
	" -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=37" +
	" -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=37"

const chartDir = "memagent"

var (
	helmOnce sync.Once
	helmPath string
	helmErr  error
)

// helm returns the path of a Helm CLI, building it once per machine into
// the user's cache directory (a minute or two on 2 cores the first time).
func helm(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the Helm CLI")
	}
	helmOnce.Do(func() {
		if helmErr = readChart(); helmErr == nil {
			helmPath, helmErr = buildHelm()
		}
	})
	if helmErr != nil {
		t.Fatal(helmErr)
	}
	return helmPath
}

// readChart reads every file of the chart and of testdata. Helm reads them
// in another process, which go test's result cache cannot see; files this
// process reads are part of the cache key, so editing the chart reruns the
// tests.
func readChart() error {
	for _, root := range []string{chartDir, "testdata"} {
		err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			_, err = os.ReadFile(path)
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func buildHelm() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "memagent", "helm-"+helmVersion)
	bin := filepath.Join(dir, "helm")
	if out, err := exec.Command(bin, "version", "--short").Output(); err == nil && strings.HasPrefix(string(out), helmVersion) {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// Built into a fresh directory and renamed, so a concurrent or
	// interrupted build never leaves a half-written binary at bin.
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	began := time.Now()
	cmd := exec.Command("go", "install", "-ldflags="+helmLDFlags, "helm.sh/helm/v3/cmd/helm@"+helmVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+tmp, "CGO_ENABLED=0", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build helm %s: %v\n%s", helmVersion, err, out)
	}
	if err := os.Rename(filepath.Join(tmp, "helm"), bin); err != nil {
		return "", err
	}
	fmt.Fprintf(os.Stderr, "built helm %s in %s\n", helmVersion, time.Since(began).Round(time.Second))
	return bin, nil
}

// obj is one rendered Kubernetes object.
type obj map[string]any

func (o obj) kind() string { s, _ := o["kind"].(string); return s }
func (o obj) name() string { s, _ := dig(o, "metadata", "name").(string); return s }

// dig walks maps by key and lists by index; nil when a step is missing.
func dig(v any, path ...any) any {
	for _, p := range path {
		if o, ok := v.(obj); ok {
			v = map[string]any(o)
		}
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

// render runs helm template on the chart with args and parses the objects.
// A failed render returns Helm's message as the error.
func render(t *testing.T, args ...string) ([]obj, error) {
	t.Helper()
	cmd := exec.Command(helm(t), append([]string{"template", "t", chartDir, "--namespace", "qa"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%v: %s", err, stderr.String())
	}
	var objs []obj
	dec := yaml.NewDecoder(&stdout)
	for {
		// Into a plain map: yaml.v3 would give nested maps the named type.
		var o map[string]any
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			// yaml.v3 refuses duplicate keys, which the API server would
			// also reject.
			t.Fatalf("rendered YAML does not parse: %v", err)
		}
		if o != nil {
			objs = append(objs, obj(o))
		}
	}
	return objs, nil
}

func mustRender(t *testing.T, args ...string) []obj {
	t.Helper()
	objs, err := render(t, args...)
	if err != nil {
		t.Fatalf("helm template %v: %v", args, err)
	}
	return objs
}

func find(t *testing.T, objs []obj, kind string) obj {
	t.Helper()
	var found []obj
	for _, o := range objs {
		if o.kind() == kind {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d objects of kind %s, want 1", len(found), kind)
	}
	return found[0]
}

func kinds(objs []obj) []string {
	var ks []string
	for _, o := range objs {
		ks = append(ks, o.kind())
	}
	slices.Sort(ks)
	return ks
}

// container returns the Deployment's worker container.
func container(t *testing.T, objs []obj) map[string]any {
	t.Helper()
	c, ok := dig(find(t, objs, "Deployment"), "spec", "template", "spec", "containers", 0).(map[string]any)
	if !ok || c["name"] != "worker" {
		t.Fatalf("no worker container in the Deployment")
	}
	return c
}

// envOf returns the container's env entries by name.
func envOf(c map[string]any) map[string]map[string]any {
	env := map[string]map[string]any{}
	list, _ := c["env"].([]any)
	for _, e := range list {
		m := e.(map[string]any)
		env[m["name"].(string)] = m
	}
	return env
}

// workerEnv is the environment the worker process would see, less the
// values that come from Secrets (given as "<secret>/<key>").
func workerEnv(t *testing.T, objs []obj) map[string]string {
	t.Helper()
	env := map[string]string{}
	for k, v := range dig(find(t, objs, "ConfigMap"), "data").(map[string]any) {
		env[k] = v.(string)
	}
	for name, e := range envOf(container(t, objs)) {
		if v, ok := e["value"].(string); ok {
			env[name] = v
		} else if ref, ok := dig(e, "valueFrom", "secretKeyRef").(map[string]any); ok {
			env[name] = fmt.Sprintf("%s/%s", ref["name"], ref["key"])
		}
	}
	return env
}

func asInt(t *testing.T, v any) int {
	t.Helper()
	switch n := v.(type) {
	case int:
		return n
	case float64:
		return int(n)
	}
	t.Fatalf("%v (%T) is not a number", v, v)
	return 0
}

func TestLint(t *testing.T) {
	for _, values := range []string{"", "testdata/all-features.yaml"} {
		t.Run("values="+values, func(t *testing.T) {
			args := []string{"lint", "--strict", chartDir}
			if values != "" {
				args = append(args, "-f", values)
			}
			out, err := exec.Command(helm(t), args...).CombinedOutput()
			if err != nil {
				t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			// In lint mode a template's `fail` is only an [INFO] line.
			if strings.Contains(string(out), "Fail:") {
				t.Errorf("a template check failed under lint:\n%s", out)
			}
		})
	}
}

func TestRenderDefaults(t *testing.T) {
	objs := mustRender(t)
	want := []string{"ConfigMap", "Deployment", "Job", "PodDisruptionBudget", "Service", "ServiceAccount"}
	if got := kinds(objs); !slices.Equal(got, want) {
		t.Errorf("kinds = %v, want %v (no HPA, KEDA, ServiceMonitor or NetworkPolicy by default)", got, want)
	}
	dep := find(t, objs, "Deployment")
	if r := dig(dep, "spec", "replicas"); r == nil || asInt(t, r) != 2 {
		t.Errorf("replicas = %v, want 2", r)
	}
	c := container(t, objs)
	if got := dig(c, "command", 0); got != "/worker" {
		t.Errorf("command = %v, want /worker", got)
	}

	t.Run("probes", func(t *testing.T) {
		for probe, path := range map[string]string{"livenessProbe": "/healthz", "readinessProbe": "/readyz", "startupProbe": "/healthz"} {
			if got := dig(c, probe, "httpGet", "path"); got != path {
				t.Errorf("%s path = %v, want %s", probe, got, path)
			}
			if got := dig(c, probe, "httpGet", "port"); got != "http" {
				t.Errorf("%s port = %v, want the http port", probe, got)
			}
		}
		if got := dig(c, "ports", 0, "containerPort"); got == nil || asInt(t, got) != 9464 {
			t.Errorf("containerPort = %v, want 9464", got)
		}
	})

	t.Run("security context", func(t *testing.T) {
		pod := dig(dep, "spec", "template", "spec", "securityContext")
		if dig(pod, "runAsNonRoot") != true || dig(pod, "seccompProfile", "type") != "RuntimeDefault" {
			t.Errorf("pod securityContext = %v, want runAsNonRoot and seccomp RuntimeDefault", pod)
		}
		sc := c["securityContext"]
		checks := map[string]any{
			"runAsNonRoot": dig(sc, "runAsNonRoot"), "readOnlyRootFilesystem": dig(sc, "readOnlyRootFilesystem"),
			"allowPrivilegeEscalation=false": dig(sc, "allowPrivilegeEscalation") == false,
			"drop ALL":                       fmt.Sprint(dig(sc, "capabilities", "drop")) == "[ALL]",
			"seccomp RuntimeDefault":         dig(sc, "seccompProfile", "type") == "RuntimeDefault",
		}
		for what, ok := range checks {
			if ok != true {
				t.Errorf("container securityContext lacks %s: %v", what, sc)
			}
		}
		if dig(dep, "spec", "template", "spec", "automountServiceAccountToken") != false {
			t.Errorf("the API token is mounted; the worker never calls the Kubernetes API")
		}
		// The read-only root needs a writable /tmp (UTF-8 replacement copies).
		mounts := fmt.Sprint(c["volumeMounts"])
		vols := fmt.Sprint(dig(dep, "spec", "template", "spec", "volumes"))
		if !strings.Contains(mounts, "mountPath:/tmp") || !strings.Contains(vols, "emptyDir") {
			t.Errorf("no emptyDir at /tmp: mounts %s, volumes %s", mounts, vols)
		}
	})

	t.Run("resources", func(t *testing.T) {
		if dig(c, "resources", "requests", "cpu") == nil || dig(c, "resources", "requests", "memory") == nil || dig(c, "resources", "limits", "memory") == nil {
			t.Errorf("resources = %v, want CPU and memory requests and a memory limit", c["resources"])
		}
	})

	t.Run("configuration reaches config.Load", func(t *testing.T) {
		env := workerEnv(t, objs)
		cfg, err := config.FromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
		if err != nil {
			t.Fatalf("config.FromEnv on the chart's environment: %v", err)
		}
		cfg.Normalize()
		if err := cfg.Validate(); err != nil {
			t.Errorf("the chart's default configuration does not validate: %v", err)
		}
		if cfg.TemporalAddress != "temporal-frontend.temporal.svc.cluster.local:7233" || cfg.TaskQueue != "memagent" || cfg.S3Endpoint != "" || cfg.Bucket != "memagent" {
			t.Errorf("config = %s %s %q %s, want the chart's defaults (S3 endpoint aws = AWS itself)", cfg.TemporalAddress, cfg.TaskQueue, cfg.S3Endpoint, cfg.Bucket)
		}
		if cfg.HTTPAddr != ":9464" {
			t.Errorf("HTTPAddr = %q, want :9464 so probes and scrapes reach it", cfg.HTTPAddr)
		}
		if cfg.S3AccessKeyID != "" {
			t.Errorf("S3 keys set without a Secret: the dev stack's keys leaked into a deployment")
		}
		grace := asInt(t, dig(dep, "spec", "template", "spec", "terminationGracePeriodSeconds"))
		if stop := cfg.WorkerStopTimeout(); stop != 30*time.Second || time.Duration(grace)*time.Second <= stop {
			t.Errorf("stop timeout %v, grace period %ds: want 30s and a grace period above it", stop, grace)
		}
	})

	t.Run("no credential in plain values", func(t *testing.T) {
		for _, name := range []string{"OPENAI_API_KEY", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "TEMPORAL_API_KEY", "MEMAGENT_CODEC_KEYS", "MEMAGENT_CODEC_TOKEN"} {
			if _, ok := workerEnv(t, objs)[name]; ok {
				t.Errorf("%s is set by default; it must come only from a Secret the user names", name)
			}
		}
	})

	t.Run("setup job", func(t *testing.T) {
		job := find(t, objs, "Job")
		if got := dig(job, "metadata", "annotations", "helm.sh/hook"); got != "post-install,post-upgrade" {
			t.Errorf("setup Job hook = %v", got)
		}
		if got := fmt.Sprint(dig(job, "spec", "template", "spec", "containers", 0, "command")); got != "[/starter setup]" {
			t.Errorf("setup Job command = %s, want [/starter setup]", got)
		}
		if got := dig(job, "spec", "template", "metadata", "labels", "app.kubernetes.io/component"); got != "setup" {
			t.Errorf("setup pods labelled component=%v: the worker Service and PDB would select them", got)
		}
	})

	t.Run("service", func(t *testing.T) {
		svc := find(t, objs, "Service")
		if fmt.Sprint(dig(svc, "spec", "selector")) != fmt.Sprint(dig(dep, "spec", "selector", "matchLabels")) {
			t.Errorf("Service selector %v differs from the Deployment's %v", dig(svc, "spec", "selector"), dig(dep, "spec", "selector", "matchLabels"))
		}
		if dig(svc, "spec", "ports", 0, "targetPort") != "http" {
			t.Errorf("Service targets %v, want the http port", dig(svc, "spec", "ports", 0, "targetPort"))
		}
	})
}

func TestRenderAllFeatures(t *testing.T) {
	objs := mustRender(t, "-f", "testdata/all-features.yaml")
	want := []string{"ConfigMap", "Deployment", "Job", "NetworkPolicy", "PodDisruptionBudget", "ScaledObject", "Service", "ServiceAccount", "ServiceMonitor", "TriggerAuthentication"}
	if got := kinds(objs); !slices.Equal(got, want) {
		t.Fatalf("kinds = %v, want %v", got, want)
	}
	dep := find(t, objs, "Deployment")
	pod := dig(dep, "spec", "template", "spec")
	c := container(t, objs)
	env := envOf(c)

	t.Run("temporal compression", func(t *testing.T) {
		v, ok := workerEnv(t, objs)["MEMAGENT_TEMPORAL_COMPRESSION"]
		cfg, err := config.FromEnv(func(k string) (string, bool) { return v, ok && k == "MEMAGENT_TEMPORAL_COMPRESSION" })
		if err != nil || cfg.TemporalCompression != "none" {
			t.Errorf("TemporalCompression = %q (%v), want temporal.compression's none", cfg.TemporalCompression, err)
		}
	})

	t.Run("chunk cache", func(t *testing.T) {
		v := workerEnv(t, objs)["MEMAGENT_CHUNK_CACHE_MB"]
		cfg, err := config.FromEnv(func(k string) (string, bool) { return v, k == "MEMAGENT_CHUNK_CACHE_MB" })
		if err != nil || cfg.ChunkCacheMB != 256 {
			t.Errorf("ChunkCacheMB = %d (%v), want worker.chunkCacheMB's 256", cfg.ChunkCacheMB, err)
		}
	})

	t.Run("read and write prefixes", func(t *testing.T) {
		we := workerEnv(t, objs)
		cfg, err := config.FromEnv(func(k string) (string, bool) {
			v, ok := we[k]
			return v, ok && strings.HasPrefix(k, "MEMAGENT_") && strings.HasSuffix(k, "_PREFIXES")
		})
		if err != nil || !slices.Equal(cfg.ReadPrefixes, []string{"s3://memagent-prod/", "s3://legal-docs/contracts/"}) || !slices.Equal(cfg.WritePrefixes, []string{"s3://memagent-prod/"}) {
			t.Errorf("read prefixes %q, write prefixes %q (%v), want s3.readPrefixes and s3.writePrefixes", cfg.ReadPrefixes, cfg.WritePrefixes, err)
		}
	})

	t.Run("claims and notifications", func(t *testing.T) {
		we := workerEnv(t, objs)
		cfg, err := config.FromEnv(func(k string) (string, bool) {
			v, ok := we[k]
			return v, ok && (strings.HasPrefix(k, "MEMAGENT_CLAIM_") || strings.HasPrefix(k, "MEMAGENT_NOTIFY_"))
		})
		if err != nil || !slices.Equal(cfg.ClaimRoots, []string{"s3://memagent-prod/outputs/"}) || cfg.ClaimDepth != 1 ||
			!slices.Equal(cfg.NotifyHosts, []string{"hooks.example.com", "*.corp.example"}) || !slices.Equal(cfg.NotifyAllowNets, []string{"10.20.0.0/16"}) {
			t.Errorf("claim roots %q, depth %d, notify hosts %q, nets %q (%v): want s3.claimRoots, s3.claimDepth, notify.hosts and notify.allowNets",
				cfg.ClaimRoots, cfg.ClaimDepth, cfg.NotifyHosts, cfg.NotifyAllowNets, err)
		}
	})

	t.Run("model priority", func(t *testing.T) {
		we := workerEnv(t, objs)
		cfg, err := config.FromEnv(func(k string) (string, bool) {
			v, ok := we[k]
			return v, ok && strings.HasPrefix(k, "MEMAGENT_MODEL_PRIORITY")
		})
		if err != nil || !slices.Equal(cfg.ModelPriority, []string{"vllm", "sglang"}) || cfg.ModelPriorityHold != "on" || cfg.ModelPriorityReserve != "6" || cfg.ModelPriorityEvict != "5s" {
			t.Errorf("model priority %q, hold %q, reserve %q, evict %q (%v): want model.priority, model.priorityHold, model.priorityReserve and model.priorityEvict",
				cfg.ModelPriority, cfg.ModelPriorityHold, cfg.ModelPriorityReserve, cfg.ModelPriorityEvict, err)
		}
	})

	t.Run("KEDA temporal scaler", func(t *testing.T) {
		if r := dig(dep, "spec", "replicas"); r != nil {
			t.Errorf("Deployment sets replicas %v under KEDA; KEDA owns them", r)
		}
		so := find(t, objs, "ScaledObject")
		if dig(so, "spec", "scaleTargetRef", "name") != dep.name() {
			t.Errorf("ScaledObject targets %v, want %s", dig(so, "spec", "scaleTargetRef", "name"), dep.name())
		}
		trig := dig(so, "spec", "triggers", 0)
		md := dig(trig, "metadata")
		for k, want := range map[string]string{
			"endpoint": "memagent-qa.a1b2c.tmprl.cloud:7233", "namespace": "memagent-qa.a1b2c", "taskQueue": "memagent-docs",
			"targetQueueSize": "64", "queueTypes": "activity,workflow", "tlsServerName": "memagent-qa.a1b2c.tmprl.cloud",
		} {
			if got := dig(md, k); got != want {
				t.Errorf("trigger metadata %s = %v, want %q", k, got, want)
			}
		}
		if dig(trig, "type") != "temporal" || asInt(t, dig(so, "spec", "minReplicaCount")) != 2 || asInt(t, dig(so, "spec", "maxReplicaCount")) != 20 {
			t.Errorf("ScaledObject = %v", so["spec"])
		}
		ta := find(t, objs, "TriggerAuthentication")
		if dig(trig, "authenticationRef", "name") != ta.name() {
			t.Errorf("trigger authenticationRef %v, want %s", dig(trig, "authenticationRef", "name"), ta.name())
		}
		params := map[string]string{}
		for _, r := range dig(ta, "spec", "secretTargetRef").([]any) {
			params[dig(r, "parameter").(string)] = fmt.Sprintf("%s/%s", dig(r, "name"), dig(r, "key"))
		}
		wantParams := map[string]string{"apiKey": "temporal-api/api-key", "cert": "temporal-mtls/tls.crt", "key": "temporal-mtls/tls.key", "ca": "temporal-mtls/ca.crt"}
		if fmt.Sprint(params) != fmt.Sprint(wantParams) {
			t.Errorf("TriggerAuthentication parameters = %v, want %v", params, wantParams)
		}
	})

	t.Run("secrets by reference", func(t *testing.T) {
		for name, want := range map[string]string{
			"OPENAI_API_KEY": "vllm-key/token", "AWS_ACCESS_KEY_ID": "s3-keys/access-key-id", "AWS_SECRET_ACCESS_KEY": "s3-keys/secret-access-key",
			"TEMPORAL_API_KEY": "temporal-api/api-key", "MEMAGENT_CODEC_TOKEN": "memagent-codec/codec-token",
		} {
			ref, _ := dig(env[name], "valueFrom", "secretKeyRef").(map[string]any)
			if got := fmt.Sprintf("%v/%v", ref["name"], ref["key"]); got != want {
				t.Errorf("%s from secret %s, want %s", name, got, want)
			}
		}
		mounts := map[string]string{}
		for _, m := range c["volumeMounts"].([]any) {
			mounts[dig(m, "name").(string)] = dig(m, "mountPath").(string)
		}
		secrets := map[string]string{}
		for _, v := range dig(pod, "volumes").([]any) {
			if s, ok := dig(v, "secret", "secretName").(string); ok {
				secrets[dig(v, "name").(string)] = s
			}
		}
		for variable, vol := range map[string]string{"TEMPORAL_TLS_CLIENT_CERT_PATH": "temporal-tls", "TEMPORAL_TLS_CLIENT_KEY_PATH": "temporal-tls", "TEMPORAL_TLS_SERVER_CA_CERT_PATH": "temporal-tls", "MEMAGENT_CODEC_KEYS_FILE": "codec-keys"} {
			path, _ := dig(env[variable], "value").(string)
			if mounts[vol] == "" || !strings.HasPrefix(path, mounts[vol]+"/") {
				t.Errorf("%s = %q is not in volume %s mounted at %q", variable, path, vol, mounts[vol])
			}
		}
		if secrets["temporal-tls"] != "temporal-mtls" || secrets["codec-keys"] != "memagent-codec" {
			t.Errorf("secret volumes = %v", secrets)
		}
		// The worker accepts what the chart hands it.
		we := workerEnv(t, objs)
		cfg, err := config.FromEnv(func(k string) (string, bool) {
			if k == "MEMAGENT_CODEC_KEYS_FILE" {
				return "", false // a mounted file in the pod, absent here
			}
			v, ok := we[k]
			return v, ok
		})
		if err != nil {
			t.Fatal(err)
		}
		if !cfg.TemporalTLS || cfg.TemporalTLSCA != "/etc/memagent/temporal-tls/ca.crt" || cfg.TemporalAPIKey == "" || cfg.S3SSE != "aws:kms" ||
			strings.Join(cfg.ModelURLs, ",") != "http://vllm-0.vllm.gpu.svc:8000/v1,http://vllm-1.vllm.gpu.svc:8000/v1" || cfg.ModelMaxInFlight != 32 || cfg.RateLimit != 2.5 ||
			cfg.WorkerStopTimeout() != 120*time.Second || cfg.Model != "BytedTsinghua-SIA/RL-MemoryAgent-14B" {
			t.Errorf("config from the chart's environment = %+v", cfg)
		}
	})

	t.Run("graceful shutdown", func(t *testing.T) {
		grace := asInt(t, dig(pod, "terminationGracePeriodSeconds"))
		if grace != 5+120+15 {
			t.Errorf("terminationGracePeriodSeconds = %d, want preStop 5 + stop 120 + margin 15", grace)
		}
		if got := fmt.Sprint(dig(c, "lifecycle", "preStop", "exec", "command")); got != "[/busybox sleep 5]" {
			t.Errorf("preStop = %s, want the image's busybox sleeping 5s", got)
		}
		if got := fmt.Sprint(c["args"]); got != "[--concurrency=48 --update-template=/etc/memagent/templates/update.txt]" {
			t.Errorf("args = %s", got)
		}
	})

	t.Run("IRSA", func(t *testing.T) {
		sa := find(t, objs, "ServiceAccount")
		if got := dig(sa, "metadata", "annotations", "eks.amazonaws.com/role-arn"); got != "arn:aws:iam::123456789012:role/memagent" {
			t.Errorf("ServiceAccount role annotation = %v", got)
		}
		if dig(pod, "serviceAccountName") != sa.name() {
			t.Errorf("pods run as %v, want %s", dig(pod, "serviceAccountName"), sa.name())
		}
	})

	t.Run("ServiceMonitor", func(t *testing.T) {
		sm := find(t, objs, "ServiceMonitor")
		svc := find(t, objs, "Service")
		for k, v := range dig(sm, "spec", "selector", "matchLabels").(map[string]any) {
			if dig(svc, "metadata", "labels", k) != v {
				t.Errorf("ServiceMonitor selects %s=%v, which the Service lacks", k, v)
			}
		}
		if dig(sm, "spec", "endpoints", 0, "port") != "http" || dig(sm, "spec", "endpoints", 0, "path") != "/metrics" || dig(sm, "metadata", "labels", "release") != "prometheus" {
			t.Errorf("ServiceMonitor = %v", sm)
		}
	})

	t.Run("PodDisruptionBudget", func(t *testing.T) {
		pdb := find(t, objs, "PodDisruptionBudget")
		if asInt(t, dig(pdb, "spec", "minAvailable")) != 1 || dig(pdb, "spec", "maxUnavailable") != nil {
			t.Errorf("PDB spec = %v, want minAvailable 1 only", pdb["spec"])
		}
	})

	t.Run("NetworkPolicy", func(t *testing.T) {
		np := find(t, objs, "NetworkPolicy")
		if got := fmt.Sprint(dig(np, "spec", "policyTypes")); got != "[Ingress Egress]" {
			t.Errorf("policyTypes = %s", got)
		}
		var ports []string
		for _, rule := range dig(np, "spec", "egress").([]any) {
			for _, p := range dig(rule, "ports").([]any) {
				ports = append(ports, fmt.Sprintf("%v/%v", dig(p, "port"), dig(p, "protocol")))
			}
		}
		for _, want := range []string{"53/UDP", "53/TCP", "7233/TCP", "9000/TCP", "8000/TCP", "4318/TCP"} {
			if !slices.Contains(ports, want) {
				t.Errorf("egress ports %v lack %s", ports, want)
			}
		}
		if got := dig(np, "spec", "ingress", 0, "ports", 0, "port"); got != "http" {
			t.Errorf("ingress port = %v, want only the http port", got)
		}
		if dig(np, "spec", "ingress", 0, "from", 0, "namespaceSelector") == nil {
			t.Errorf("ingress from = %v, want the monitoring namespace", dig(np, "spec", "ingress", 0, "from"))
		}
	})
}

func TestHPA(t *testing.T) {
	objs := mustRender(t, "--set", "autoscaling.enabled=true")
	hpa := find(t, objs, "HorizontalPodAutoscaler")
	if dig(hpa, "spec", "metrics", 0, "resource", "name") != "cpu" || asInt(t, dig(hpa, "spec", "maxReplicas")) != 10 {
		t.Errorf("HPA spec = %v", hpa["spec"])
	}
	if r := dig(find(t, objs, "Deployment"), "spec", "replicas"); r != nil {
		t.Errorf("Deployment sets replicas %v under an HPA", r)
	}
}

// TestRejected checks that bad values fail the render with a message that
// says what to change.
func TestRejected(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"HPA and KEDA together", []string{"--set", "autoscaling.enabled=true,keda.enabled=true"}, "two autoscalers on one Deployment"},
		{"negative replicas", []string{"--set", "replicaCount=-1"}, "/replicaCount"},
		{"replicas of the wrong type", []string{"--set-string", "replicaCount=two"}, "want integer"},
		{"misspelt key", []string{"--set", "replicas=3"}, "additional properties 'replicas'"},
		{"API key as a plain value", []string{"--set", "model.apiKey=sk-123"}, "/model/apiKey"},
		{"API key in extraEnv", []string{"--set", "extraEnv[0].name=OPENAI_API_KEY,extraEnv[0].value=sk-123"}, "OPENAI_API_KEY is a credential"},
		{"grace period under the stop timeout", []string{"--set", "shutdown.terminationGracePeriodSeconds=20"}, "must exceed"},
		{"unknown KEDA queue type", []string{"--set", "keda.queueTypes={chunks}"}, "/keda/queueTypes/0"},
		{"unknown log level", []string{"--set", "worker.logLevel=loud"}, "/worker/logLevel"},
		{"model URL without scheme", []string{"--set", "model.baseURLs={vllm:8000}"}, "/model/baseURLs/0"},
		{"unknown model priority", []string{"--set", "model.priority={triton}"}, "/model/priority/0"},
		{"model priority reserve as a share", []string{"--set-string", "model.priorityReserve=25%"}, "/model/priorityReserve"},
		{"model priority evict without a unit", []string{"--set-string", "model.priorityEvict=10"}, "/model/priorityEvict"},
		{"model priority hold unquoted", []string{"--set", "model.priorityHold=true"}, "/model/priorityHold"},
		{"codec keys without a token", []string{"--set", "codec.existingSecret=codec,codec.tokenKey="}, "needs a bearer token"},
		{"mTLS certificate without key", []string{"--set", "temporal.tls.existingSecret=tls,temporal.tls.keyKey="}, "go together"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := render(t, tt.args...)
			if err == nil {
				t.Fatalf("helm template %v succeeded, want an error containing %q", tt.args, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

// TestImage pins the image by digest when one is given.
func TestImage(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, "ghcr.io/memagent/memagent:0.1.0"},
		{[]string{"--set", "image.tag=1.2.3"}, "ghcr.io/memagent/memagent:1.2.3"},
		{[]string{"--set", "image.digest=" + digest}, "ghcr.io/memagent/memagent@" + digest},
	} {
		if got := dig(container(t, mustRender(t, tt.args...)), "image"); got != tt.want {
			t.Errorf("image with %v = %v, want %s", tt.args, got, tt.want)
		}
	}
	// appVersion is what the default tag follows.
	b, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "appVersion: "+strconv.Quote("0.1.0")) {
		t.Errorf("Chart.yaml appVersion is not 0.1.0; update this test with it")
	}
}

// With model.api azure the chart hands the worker Azure OpenAI's
// variables, the key from the Secret included, and the worker accepts them.
func TestRenderAzure(t *testing.T) {
	objs := mustRender(t, "--set", "model.api=azure,model.name=gpt-4o-qa,model.baseURLs={https://res.openai.azure.com},"+
		"model.apiKey.existingSecret=azure-openai,model.apiVersion=2025-01-01-preview,model.context=128000,model.family=gpt-4o")
	env := workerEnv(t, objs)
	if _, ok := env["OPENAI_BASE_URL"]; ok {
		t.Errorf("OPENAI_BASE_URL is set with model.api azure")
	}
	if _, ok := env["OPENAI_API_KEY"]; ok {
		t.Errorf("OPENAI_API_KEY is set with model.api azure")
	}
	if env["AZURE_OPENAI_API_KEY"] != "azure-openai/api-key" {
		t.Errorf("AZURE_OPENAI_API_KEY from %q, want the secret azure-openai/api-key", env["AZURE_OPENAI_API_KEY"])
	}
	cfg, err := config.FromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ModelAPI != "azure" || strings.Join(cfg.ModelURLs, ",") != "https://res.openai.azure.com" || cfg.Model != "gpt-4o-qa" ||
		cfg.ModelAPIVersion != "2025-01-01-preview" || cfg.ModelContext != 128000 || cfg.ModelFamily != "gpt-4o" || cfg.ModelAPIKey == "" {
		t.Errorf("config from the chart's environment: API %q, endpoint %q, model %q, version %q, context %d, family %q",
			cfg.ModelAPI, cfg.ModelURLs, cfg.Model, cfg.ModelAPIVersion, cfg.ModelContext, cfg.ModelFamily)
	}
	cfg.Normalize()
	if err := cfg.Validate(); err != nil {
		t.Errorf("the worker refuses the chart's Azure settings: %v", err)
	}

	for _, tc := range []struct{ set, want string }{
		{"model.api=azure,model.apiKey.existingSecret=k", "model.name is empty"},
		{"model.api=azure,model.name=d", "model.apiKey.existingSecret is empty"},
		{"model.api=bedrock", "/model/api"},
		{"model.context=-1", "/model/context"},
	} {
		if _, err := render(t, "--set", tc.set); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("helm template --set %s: %v, want an error containing %q", tc.set, err, tc.want)
		}
	}
}

// TestOCRValues: the chart bounds the worker's OCR (two pages at once by
// default, within the 1 GiB limit) in the variables the worker reads, and
// ocr.enabled false turns it off.
func TestOCRValues(t *testing.T) {
	env := workerEnv(t, mustRender(t))
	cfg, err := config.FromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok && strings.HasPrefix(k, "MEMAGENT_OCR_") })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Limits.OCRWorkers != 2 || cfg.Limits.OCRPageTimeout != 2*time.Minute || cfg.Limits.OCRMemoryBytes != 512<<20 || env["MEMAGENT_TESSERACT"] != "" {
		t.Errorf("OCR config %d workers, %v a page, %d MiB, MEMAGENT_TESSERACT %q; want 2, 2m, 512 and unset", cfg.Limits.OCRWorkers, cfg.Limits.OCRPageTimeout, cfg.Limits.OCRMemoryBytes>>20, env["MEMAGENT_TESSERACT"])
	}
	if cfg.Limits.OCRMaxPages != 500 || cfg.Limits.OCRBudget != 30*time.Minute {
		t.Errorf("OCR config %d pages, a budget of %v; want 500 and 30m", cfg.Limits.OCRMaxPages, cfg.Limits.OCRBudget)
	}
	off := workerEnv(t, mustRender(t, "--set", "ocr.enabled=false"))
	if off["MEMAGENT_TESSERACT"] != "none" || off["MEMAGENT_OCR_WORKERS"] != "" {
		t.Errorf("ocr.enabled=false: MEMAGENT_TESSERACT %q, MEMAGENT_OCR_WORKERS %q; want none and unset", off["MEMAGENT_TESSERACT"], off["MEMAGENT_OCR_WORKERS"])
	}
	if _, err := render(t, "--set", "ocr.pageTimeout=soon"); err == nil {
		t.Error("ocr.pageTimeout=soon rendered")
	}
}
