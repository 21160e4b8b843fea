package plugin

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"time"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/codec"
	"github.com/memagent/memagent/internal/devaddr"
	"github.com/memagent/memagent/internal/inference"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/settings"
)

// DevOptions are the options that reach the embedded dev stack: S3 on
// 127.0.0.1:9000 (path-style), bucket "memagent", the model server on
// 127.0.0.1:8000, a codec server the stack's UI may call, and the default
// timeouts. OptionsFromEnv starts from them.
func DevOptions() Options {
	return Options{
		TaskQueue:    api.DefaultTaskQueue,
		S3Endpoint:   devaddr.S3Endpoint,
		S3Region:     devaddr.Region,
		Bucket:       devaddr.Bucket,
		ModelURLs:    []string{devaddr.ModelBaseURL},
		ModelTimeout: DefaultModelTimeout,
		CodecServer:  CodecHandlerOptions{AllowOrigins: []string{devaddr.UIURL}},
		StopTimeout:  DefaultStopTimeout,
	}
}

// OptionsFromEnv returns options from the environment memagent's own
// worker reads: DevOptions overridden by the usual environment variables
// (MEMAGENT_BUCKET, AWS_ENDPOINT_URL_S3, AWS_REGION, OPENAI_BASE_URL,
// OPENAI_API_KEY, MEMAGENT_MODEL, MEMAGENT_CODEC_KEYS, ...; see the
// README). It leaves InstallConverter false and Logger nil. An error names
// the variable that does not parse.
//
// It reads every setting memagent's worker reads that is not the host's
// own (the Temporal connection, logging and the worker's HTTP endpoint).
func OptionsFromEnv() (Options, error) {
	o, err := OptionsFromLookup(os.LookupEnv)
	if err != nil {
		return Options{}, fmt.Errorf("memagent plugin: %w", err)
	}
	return o, nil
}

// OptionsFromLookup is OptionsFromEnv reading the variables through lookup
// (a map in tests, or a host's own source), with errors unprefixed: the
// loader of memagent's worker configuration, which embeds Options, calls it.
// A variable set to the empty string counts as unset.
func OptionsFromLookup(lookup func(name string) (string, bool)) (Options, error) {
	o := DevOptions()
	if err := settings.Apply(&o, envSettings, lookup); err != nil {
		return o, err
	}
	if o.S3Endpoint == s3store.AWSEndpoint {
		o.S3Endpoint = ""
	}
	return o, nil
}

// EnvNames are the variables OptionsFromEnv reads through its table, in
// the order it reads them (Azure's, the codec keys' and AWS's credential
// variables are read besides).
func EnvNames() []string { return settings.Names(envSettings) }

// envSettings are the variables OptionsFromLookup reads, in order: a later
// one may depend on an earlier one (Azure's variables on
// MEMAGENT_MODEL_API, the dev stack's credentials on the S3 endpoint).
var envSettings = []settings.Row[Options]{
	{Names: []string{"MEMAGENT_TASK_QUEUE"}, Field: "TaskQueue", Set: settings.Text(func(o *Options) *string { return &o.TaskQueue })},
	{Names: []string{"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"}, Field: "S3Endpoint", Set: settings.Text(func(o *Options) *string { return &o.S3Endpoint })},
	{Names: []string{"AWS_REGION", "AWS_DEFAULT_REGION"}, Field: "S3Region", Set: settings.Text(func(o *Options) *string { return &o.S3Region })},
	{Names: []string{"MEMAGENT_BUCKET"}, Field: "Bucket", Set: settings.Text(func(o *Options) *string { return &o.Bucket })},
	{Names: []string{"MEMAGENT_CREATE_BUCKET"}, Field: "CreateBucket", Set: settings.Bool(func(o *Options, b bool) { o.CreateBucket = b })},
	{Names: []string{"MEMAGENT_READ_PREFIXES"}, Field: "ReadPrefixes", Set: settings.List(func(o *Options) *[]string { return &o.ReadPrefixes })},
	{Names: []string{"MEMAGENT_WRITE_PREFIXES"}, Field: "WritePrefixes", Set: settings.List(func(o *Options) *[]string { return &o.WritePrefixes })},
	{Names: []string{"MEMAGENT_CLAIM_ROOTS"}, Field: "ClaimRoots", Set: settings.List(func(o *Options) *[]string { return &o.ClaimRoots })},
	{Names: []string{"MEMAGENT_CLAIM_DEPTH"}, Field: "ClaimDepth", Set: settings.Whole(func(o *Options, n int) { o.ClaimDepth = n }, 0, math.MaxInt,
		"want how many folders below its claim root a claimed prefix must be, at least (e.g. 2; 0 = the default, 2)")},
	{Names: []string{"MEMAGENT_NOTIFY_HOSTS"}, Field: "NotifyHosts", Set: settings.List(func(o *Options) *[]string { return &o.NotifyHosts })},
	{Names: []string{"MEMAGENT_NOTIFY_ALLOW_NETS"}, Field: "NotifyAllowNets", Set: settings.List(func(o *Options) *[]string { return &o.NotifyAllowNets })},
	{Names: []string{"MEMAGENT_S3_PATH_STYLE"}, Field: "S3VirtualHostStyle", Set: settings.Bool(func(o *Options, pathStyle bool) { o.S3VirtualHostStyle = !pathStyle })},
	{Names: []string{"OPENAI_BASE_URL"}, Field: "ModelURLs", Set: settings.List(func(o *Options) *[]string { return &o.ModelURLs })},
	{Names: []string{"OPENAI_API_KEY"}, Field: "ModelAPIKey", Set: settings.Text(func(o *Options) *string { return &o.ModelAPIKey })},
	{Names: []string{"MEMAGENT_MODEL_API"}, Field: "ModelAPI", Set: func(o *Options, name, v string) error {
		api, err := inference.ParseAPI(v)
		if err != nil {
			return fmt.Errorf("%s %q: use openai (OpenAI and compatible servers such as vLLM) or azure (Azure OpenAI)", name, v)
		}
		o.ModelAPI = string(api)
		return nil
	}},
	{Load: loadAzure},
	{Names: []string{"OPENAI_API_VERSION"}, Field: "ModelAPIVersion", Set: settings.Text(func(o *Options) *string { return &o.ModelAPIVersion })},
	{Names: []string{"MEMAGENT_MODEL"}, Field: "Model", Set: settings.Text(func(o *Options) *string { return &o.Model })},
	{Names: []string{"MEMAGENT_MODEL_FAMILY"}, Field: "ModelFamily", Set: settings.Text(func(o *Options) *string { return &o.ModelFamily })},
	{Names: []string{"MEMAGENT_MODEL_CONTEXT"}, Field: "ModelContext", Set: settings.Whole(func(o *Options, n int) { o.ModelContext = n }, 0, math.MaxInt,
		"want the model's context length in tokens, e.g. 128000 (0 = what the server reports)")},
	{Names: []string{"MEMAGENT_MODEL_TIMEOUT"}, Field: "ModelTimeout", Set: settings.Positive(func(o *Options, d time.Duration) { o.ModelTimeout = d }, "10m")},
	{Names: []string{"MEMAGENT_MAX_IN_FLIGHT"}, Field: "ModelMaxInFlight", Set: settings.Whole(func(o *Options, n int) { o.ModelMaxInFlight = n }, 0, math.MaxInt,
		"want a whole number >= 0")},
	{Names: []string{"MEMAGENT_MODEL_PRIORITY"}, Field: "ModelPriority", Set: settings.List(func(o *Options) *[]string { return &o.ModelPriority })},
	{Names: []string{"MEMAGENT_MODEL_PRIORITY_HOLD"}, Field: "ModelPriorityHold", Set: settings.Text(func(o *Options) *string { return &o.ModelPriorityHold })},
	{Names: []string{"MEMAGENT_MODEL_PRIORITY_RESERVE"}, Field: "ModelPriorityReserve", Set: settings.Text(func(o *Options) *string { return &o.ModelPriorityReserve })},
	{Names: []string{"MEMAGENT_MODEL_PRIORITY_EVICT"}, Field: "ModelPriorityEvict", Set: settings.Text(func(o *Options) *string { return &o.ModelPriorityEvict })},
	{Names: []string{"MEMAGENT_CHUNK_CACHE_MB"}, Field: "ChunkCacheMB", Set: settings.Whole(func(o *Options, n int) { o.ChunkCacheMB = n }, -1, math.MaxInt,
		"want megabytes >= 0 (0 = the default, 64), or -1 to turn the cache off")},
	{Names: []string{"MEMAGENT_RATE_LIMIT"}, Field: "RateLimit", Set: func(o *Options, name, v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 {
			return fmt.Errorf("%s %q: want activities per second >= 0", name, v)
		}
		o.RateLimit = f
		return nil
	}},
	{Names: []string{"MEMAGENT_MAX_CONVERTED_MB"}, Field: "Limits.MaxConvertedBytes", Set: mib(func(o *Options) *int64 { return &o.Limits.MaxConvertedBytes })},
	{Names: []string{"MEMAGENT_PDF_MEMORY_MB"}, Field: "Limits.PDFMemoryBytes", Set: mib(func(o *Options) *int64 { return &o.Limits.PDFMemoryBytes })},
	{Names: []string{"MEMAGENT_OCR_MEMORY_MB"}, Field: "Limits.OCRMemoryBytes", Set: mib(func(o *Options) *int64 { return &o.Limits.OCRMemoryBytes })},
	{Names: []string{"MEMAGENT_TESSERACT"}, Field: "OCRCommand", Set: settings.Text(func(o *Options) *string { return &o.OCRCommand })},
	{Names: []string{"MEMAGENT_OCR_WORKERS"}, Field: "Limits.OCRWorkers", Set: settings.Whole(func(o *Options, n int) { o.Limits.OCRWorkers = n }, 0, 1024,
		"want a number of pages read at once, 0 for one per CPU")},
	{Names: []string{"MEMAGENT_OCR_PAGE_TIMEOUT"}, Field: "Limits.OCRPageTimeout", Set: settings.Positive(func(o *Options, d time.Duration) { o.Limits.OCRPageTimeout = d }, "2m")},
	{Names: []string{"MEMAGENT_OCR_MAX_PAGES"}, Field: "Limits.OCRMaxPages", Set: settings.Whole(func(o *Options, n int) { o.Limits.OCRMaxPages = n }, 1, math.MaxInt,
		"want a number of pages >= 1 that one document may have read by OCR, e.g. 500")},
	{Names: []string{"MEMAGENT_OCR_BUDGET"}, Field: "Limits.OCRBudget", Set: settings.Positive(func(o *Options, d time.Duration) { o.Limits.OCRBudget = d }, "30m")},
	{Names: []string{"MEMAGENT_EMAIL_MAX_MESSAGES"}, Field: "Limits.EmailMaxMessages", Set: settings.Whole(func(o *Options, n int) { o.Limits.EmailMaxMessages = n }, 1, math.MaxInt,
		"want a number of messages >= 1 that one mailbox may hold, e.g. 100000")},
	{Names: []string{"MEMAGENT_EMAIL_MAX_MESSAGE_MB"}, Field: "Limits.EmailMaxMessageBytes", Set: mib(func(o *Options) *int64 { return &o.Limits.EmailMaxMessageBytes })},
	{Names: []string{"MEMAGENT_EMAIL_MAX_PARTS"}, Field: "Limits.EmailMaxParts", Set: settings.Whole(func(o *Options, n int) { o.Limits.EmailMaxParts = n }, 1, math.MaxInt,
		"want a number of MIME parts >= 1 that one message may have, e.g. 1000")},
	{Names: []string{"MEMAGENT_EMAIL_MAX_DEPTH"}, Field: "Limits.EmailMaxDepth", Set: settings.Whole(func(o *Options, n int) { o.Limits.EmailMaxDepth = n }, 1, math.MaxInt,
		"want how deep >= 1 one message may nest its multiparts and forwarded messages, e.g. 16")},
	{Names: []string{"MEMAGENT_EMAIL_MAX_PART_MB"}, Field: "Limits.EmailMaxPartBytes", Set: mib(func(o *Options) *int64 { return &o.Limits.EmailMaxPartBytes })},
	{Names: []string{"MEMAGENT_EMAIL_MAX_HEADER_KB"}, Field: "Limits.EmailMaxHeaderBytes", Set: settings.Whole(func(o *Options, n int) { o.Limits.EmailMaxHeaderBytes = int64(n) << 10 }, 1, math.MaxInt>>10,
		"want a positive number of KiB, e.g. 256")},
	{Names: []string{"MEMAGENT_CONVERT_TIMEOUT"}, Field: "Limits.ConvertTimeout", Set: settings.Positive(func(o *Options, d time.Duration) { o.Limits.ConvertTimeout = d }, "10m")},
	{Names: []string{"MEMAGENT_STOP_TIMEOUT"}, Field: "StopTimeout", Set: settings.Positive(func(o *Options, d time.Duration) { o.StopTimeout = d }, "30s or 5m")},
	{Names: []string{"TEMPORAL_DEPLOYMENT_NAME"}, Field: "DeploymentName", Set: settings.Text(func(o *Options) *string { return &o.DeploymentName })},
	{Names: []string{"TEMPORAL_WORKER_BUILD_ID"}, Field: "BuildID", Set: settings.Text(func(o *Options) *string { return &o.BuildID })},
	{Names: []string{"MEMAGENT_S3_SSE"}, Field: "S3SSE", Set: settings.Text(func(o *Options) *string { return &o.S3SSE })},
	{Names: []string{"MEMAGENT_S3_KMS_KEY_ID"}, Field: "S3KMSKeyID", Set: settings.Text(func(o *Options) *string { return &o.S3KMSKeyID })},
	{Names: []string{"MEMAGENT_CODEC_KEYS_FILE", "MEMAGENT_CODEC_KEYS"}, Field: "CodecKeys", Load: func(o *Options, lookup settings.Lookup) error {
		keys, err := codec.LoadKeys(lookup)
		if err != nil {
			return fmt.Errorf("%w (MEMAGENT_CODEC_KEYS_FILE or MEMAGENT_CODEC_KEYS: id:base64key entries, a key made with `openssl rand -base64 32`)", err)
		}
		o.CodecKeys = nil
		for _, k := range keys {
			o.CodecKeys = append(o.CodecKeys, CodecKey{ID: k.ID, Key: []byte(k.Raw)})
		}
		return nil
	}},
	{Names: []string{"MEMAGENT_CODEC_TOKEN"}, Field: "CodecServer.Token", Set: settings.Text(func(o *Options) *string { return &o.CodecServer.Token })},
	{Names: []string{"MEMAGENT_CODEC_HOSTS"}, Field: "CodecServer.AllowHosts", Set: settings.List(func(o *Options) *[]string { return &o.CodecServer.AllowHosts })},
	{Names: []string{"MEMAGENT_CODEC_ENCODE"}, Field: "CodecServer.AllowEncode", Set: settings.Bool(func(o *Options, b bool) { o.CodecServer.AllowEncode = b })},
	{Names: []string{"MEMAGENT_CODEC_CORS_ORIGINS"}, Field: "CodecServer.AllowOrigins", Set: settings.List(func(o *Options) *[]string { return &o.CodecServer.AllowOrigins })},
	{Load: loadDevCredentials},
}

// mibWanted is what the MiB settings want.
const mibWanted = "want a positive number of MiB"

// mib sets a byte limit from a positive number of MiB.
func mib(field func(*Options) *int64) func(*Options, string, string) error {
	return settings.Whole(func(o *Options, n int) { *field(o) = int64(n) << 20 }, 1, math.MaxInt, mibWanted)
}

// loadAzure reads Azure's own variables, as OpenAI's SDKs read them, when
// MEMAGENT_MODEL_API is azure; the OpenAI ones are not Azure's and are not
// used.
func loadAzure(o *Options, lookup settings.Lookup) error {
	if o.ModelAPI != string(inference.APIAzure) {
		return nil
	}
	get := settings.FirstSet(lookup)
	endpoint, _ := get("AZURE_OPENAI_ENDPOINT")
	key, _ := get("AZURE_OPENAI_API_KEY")
	o.ModelURLs, o.ModelAPIKey = settings.Split(endpoint), key
	return nil
}

// loadDevCredentials supplies the dev stack's S3 keys when the endpoint is
// the dev stack's and the environment names no credentials: static ones
// from the environment are picked up by the SDK's default chain.
func loadDevCredentials(o *Options, lookup settings.Lookup) error {
	get := settings.FirstSet(lookup)
	_, hasKey := get("AWS_ACCESS_KEY_ID")
	_, hasProfile := get("AWS_PROFILE")
	if !hasKey && !hasProfile && o.S3Endpoint == devaddr.S3Endpoint {
		o.S3AccessKeyID, o.S3SecretAccessKey = devaddr.S3AccessKey, devaddr.S3SecretKey
	}
	return nil
}
