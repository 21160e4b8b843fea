package plugin

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/memagent/memagent/internal/buildinfo"
	"github.com/memagent/memagent/internal/devaddr"
	"github.com/memagent/memagent/internal/inference"
	"github.com/memagent/memagent/internal/notify"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/secret"
)

// SettingName names a setting in Validate's errors, from its Options field
// ("Bucket", "Limits.OCRBudget") and the environment variables
// OptionsFromEnv reads it from. memagent's worker names the variable and
// its own flag ("MEMAGENT_BUCKET or --bucket"); nil names the field and
// the variables ("Options.Bucket (MEMAGENT_BUCKET)").
type SettingName func(field string, env []string) string

// fieldName is the SettingName of code that fills Options itself.
func fieldName(field string, env []string) string {
	if len(env) == 0 {
		return "Options." + field
	}
	return "Options." + field + " (" + strings.Join(env, " or ") + ")"
}

// envOf is the variables OptionsFromEnv reads field from, from its table.
func envOf(field string) []string {
	for _, r := range envSettings {
		if r.Field == field {
			return r.Names
		}
	}
	return nil
}

// Validate reports every setting of o that cannot work, each error saying
// what is wrong and which setting to change, named by name (nil: the
// Options field and its variables). A worker runs it when it starts;
// memagent's worker runs it on its configuration before it dials anything,
// so that a bad setting is reported once, in the worker's words, with
// every other one.
func (o Options) Validate(name SettingName) error {
	if name == nil {
		name = fieldName
	}
	v := validation{o: o, name: func(field string) string { return name(field, envOf(field)) }, nameAs: name}
	for _, check := range []func(){v.areas, v.s3, v.model, v.worker} {
		check()
	}
	return errors.Join(v.errs...)
}

// validation collects the errors of one Validate.
type validation struct {
	o      Options
	name   func(field string) string
	nameAs SettingName
	errs   []error
}

func (v *validation) add(format string, args ...any) {
	v.errs = append(v.errs, fmt.Errorf(format, args...))
}

// areas checks the bucket and where a run may read, write and notify.
func (v *validation) areas() {
	o := v.o
	if o.Bucket == "" {
		v.add("the bucket is empty: set %s", v.name("Bucket"))
	}
	for _, area := range []struct {
		field    string
		prefixes []string
	}{{"ReadPrefixes", o.ReadPrefixes}, {"WritePrefixes", o.WritePrefixes}, {"ClaimRoots", o.ClaimRoots}} {
		for _, p := range area.prefixes {
			if rest, ok := strings.CutPrefix(p, "s3://"); !ok || strings.HasPrefix(rest, "/") {
				v.add("prefix %q is not an s3://bucket/prefix URI, or s3:// for any bucket: set %s", p, v.name(area.field))
			}
		}
	}
	if o.ClaimDepth < 0 {
		v.add("the claim depth must not be negative (0 = the default, 2): set %s", v.name("ClaimDepth"))
	}
	if _, err := notify.ParseNets(o.NotifyAllowNets); err != nil {
		v.add("%w: set %s", err, v.name("NotifyAllowNets"))
	}
	if err := notify.CheckHosts(o.NotifyHosts); err != nil {
		v.add("%w: set %s", err, v.name("NotifyHosts"))
	}
}

// s3 checks the S3 endpoint and server-side encryption.
func (v *validation) s3() {
	o := v.o
	if o.S3Client == nil && o.S3Endpoint != "" {
		if u, err := url.Parse(o.S3Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			v.add("S3 endpoint %q is not an http(s) URL: set %s to e.g. http://127.0.0.1:9000, or leave it empty for AWS", secret.URL(o.S3Endpoint), v.name("S3Endpoint"))
		}
	}
	switch o.S3SSE {
	case "", s3store.SSES3:
		if o.S3KMSKeyID != "" {
			v.add("a KMS key is set (%s) but server-side encryption is %q: set %s to aws:kms to use it", v.name("S3KMSKeyID"), o.S3SSE, v.name("S3SSE"))
		}
	case s3store.SSEKMS:
	default:
		v.add("server-side encryption %q: use AES256, aws:kms, or empty for the bucket's default: set %s", o.S3SSE, v.name("S3SSE"))
	}
}

// model checks the model servers' settings, Azure's own included.
func (v *validation) model() {
	o := v.o
	api, err := inference.ParseAPI(o.ModelAPI)
	if err != nil {
		v.add("model API %q: use openai (OpenAI and compatible servers such as vLLM) or azure: set %s", o.ModelAPI, v.name("ModelAPI"))
		return
	}
	if o.ModelContext < 0 {
		v.add("the model context %d is negative: set %s to the context length in tokens, or 0 for what the server reports", o.ModelContext, v.name("ModelContext"))
	}
	if o.ModelPriorityHold != "" {
		if _, err := inference.ParsePriorityHold(o.ModelPriorityHold); err != nil {
			v.add("%w: set %s", err, v.name("ModelPriorityHold"))
		}
	}
	if _, err := inference.ParsePriorityReserve(o.ModelPriorityReserve); err != nil {
		v.add("%w: set %s", err, v.name("ModelPriorityReserve"))
	}
	if d, err := inference.ParsePriorityEvict(o.ModelPriorityEvict); err != nil {
		v.add("%w: set %s", err, v.name("ModelPriorityEvict"))
	} else if d > 0 && o.modelPriorityHold() == 0 {
		v.add("model priority evict %q needs the hold: set %s on too, or a stopped call would be sent straight back into the urgent call's batch", o.ModelPriorityEvict, v.name("ModelPriorityHold"))
	}
	if o.ModelMaxInFlight < 0 {
		v.add("requests in flight per model server %d is negative: set %s to a whole number, 0 for the pool's default", o.ModelMaxInFlight, v.name("ModelMaxInFlight"))
		return
	}
	if o.ModelTimeout < 0 {
		v.add("the model timeout must not be negative (0 = the default, 10m): set %s", v.name("ModelTimeout"))
	}
	if api != inference.APIAzure {
		if len(o.ModelURLs) == 0 {
			v.add("no model server: set %s to the model servers' base URLs, e.g. http://gpu-1:8000/v1", v.name("ModelURLs"))
		} else if eps, err := inference.Endpoints(inference.APIOpenAI, o.ModelURLs, "", o.ModelMaxInFlight); err != nil {
			v.add("model base URL: %w: set %s", err, v.name("ModelURLs"))
		} else if err := inference.SetServerPriorities(eps, o.ModelPriority); err != nil {
			v.add("%w: set %s", err, v.name("ModelPriority"))
		}
		return
	}
	for _, f := range o.ModelPriority {
		if p, err := inference.ParseServerPriority(f); err != nil || p != inference.PriorityOff {
			v.add("model server priority %q: Azure OpenAI takes no priority field: set %s to off, or leave it unset", f, v.name("ModelPriority"))
			break
		}
	}
	endpoint := v.nameAs("ModelURLs", []string{"AZURE_OPENAI_ENDPOINT"})
	switch {
	case len(o.ModelURLs) == 0 || strings.Join(o.ModelURLs, ",") == devaddr.ModelBaseURL:
		v.add("Azure OpenAI needs its endpoint: set %s to the resource's URL, e.g. https://NAME.openai.azure.com", endpoint)
	default:
		if _, err := inference.Endpoints(inference.APIAzure, o.ModelURLs, "", o.ModelMaxInFlight); err != nil {
			v.add("%w: set %s", err, endpoint)
		}
	}
	if o.Model == "" {
		v.add("Azure OpenAI needs the deployment's name: set %s", v.name("Model"))
	}
	if o.ModelAPIKey == "" {
		v.add("Azure OpenAI needs an API key: set %s (Microsoft Entra ID tokens are not supported)", v.nameAs("ModelAPIKey", []string{"AZURE_OPENAI_API_KEY"}))
	}
}

// worker checks the worker's limits and its deployment.
func (v *validation) worker() {
	o := v.o
	if o.RateLimit < 0 {
		v.add("the rate limit must not be negative (activities a second, 0 = none): set %s", v.name("RateLimit"))
	}
	if o.ChunkCacheMB < -1 {
		v.add("the chunk cache must be megabytes >= 0 (0 = the default, 64), or -1 for none: set %s", v.name("ChunkCacheMB"))
	}
	if o.StopTimeout < 0 {
		v.add("the stop timeout must not be negative (0 = the default, 30s): set %s", v.name("StopTimeout"))
	}
	if o.Limits.OCRMaxPages < 0 {
		v.add("OCR's pages of one document must be a number >= 1 (0 = the default, 500): set %s", v.name("Limits.OCRMaxPages"))
	}
	if o.Limits.OCRBudget < 0 {
		v.add("OCR's time on one document must be a positive duration such as 30m (0 = the default): set %s", v.name("Limits.OCRBudget"))
	}
	for _, l := range []struct {
		field, what string
		value       int64
	}{
		{"Limits.EmailMaxMessages", "messages in one mailbox must be a number >= 1 (0 = the default, 100000)", int64(o.Limits.EmailMaxMessages)},
		{"Limits.EmailMaxMessageBytes", "one email message's bytes must be positive (0 = the default, 256 MiB)", o.Limits.EmailMaxMessageBytes},
		{"Limits.EmailMaxParts", "one email message's MIME parts must be a number >= 1 (0 = the default, 1000)", int64(o.Limits.EmailMaxParts)},
		{"Limits.EmailMaxDepth", "one email message's nesting must be a number of levels >= 1 (0 = the default, 16)", int64(o.Limits.EmailMaxDepth)},
		{"Limits.EmailMaxPartBytes", "one email part's decoded bytes must be positive (0 = the default, 64 MiB)", o.Limits.EmailMaxPartBytes},
		{"Limits.EmailMaxHeaderBytes", "one email header's bytes must be positive (0 = the default, 256 KiB)", o.Limits.EmailMaxHeaderBytes},
	} {
		if l.value < 0 {
			v.add("%s: set %s", l.what, v.name(l.field))
		}
	}
	if err := buildinfo.CheckDeployment(o.DeploymentName, o.BuildID, o.buildID()); err != nil {
		v.add("%w: set %s and %s", err, v.name("DeploymentName"), v.name("BuildID"))
	}
}
