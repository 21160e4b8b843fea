package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/spf13/cobra"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/clientconf"
	"github.com/memagent/memagent/internal/s3client"
)

// Wire names of a schedule's memo fields. The spec as the user wrote it is
// kept there because the server turns cron strings into calendars.
const (
	scheduleMemoSpec     = "memagent_spec"
	scheduleMemoManifest = "memagent_manifest"
	scheduleMemoReport   = "memagent_report_prefix"
	// scheduleRunMemoID is the memo field, on each run a schedule starts,
	// naming the schedule.
	scheduleRunMemoID = "memagent_schedule_id"
)

// scheduleWorkflowPrefix is the start of the workflow id of every run a
// schedule starts; Temporal appends the scheduled time.
const scheduleWorkflowPrefix = "batch-"

// defaultCatchupWindow bounds how late a missed run may still start after
// an outage: a nightly batch missed for a day is run once, not a year of them.
const defaultCatchupWindow = 24 * time.Hour

// scheduleCreate is what `schedule create` was asked for, checked by
// validate before anything reaches a server.
type scheduleCreate struct {
	ID            string
	Manifest      string
	Format        string
	Cron          string
	Every         string
	Overlap       string
	Concurrency   int
	ChunkTokens   int
	ReportPrefix  string
	Paused        bool
	Note          string
	Jitter        time.Duration
	TimeZone      string
	CatchupWindow time.Duration
	// Priority, FairnessKey and FairnessWeight go to every batch the
	// schedule starts.
	Priority       int
	FairnessKey    string
	FairnessWeight float64
	// CompareWith replaces the comparison with the previous run's report
	// (an s3:// report prefix: a fixed baseline); NotifyURL gets each
	// run's change summary.
	CompareWith string
	NotifyURL   string
	// Validation is the gate of every batch: its report provisional until
	// a validation passes (--require-validation).
	Validation *api.ValidationGate

	// Set by validate.
	every   time.Duration
	overlap enumspb.ScheduleOverlapPolicy
}

// validate checks every flag and fills the parsed fields; the errors say
// which flag to change.
func (c *scheduleCreate) validate() error {
	if err := checkScheduleID(c.ID); err != nil {
		return err
	}
	if c.Manifest == "" {
		return errors.New("no manifest: pass --manifest s3://bucket/key or a local file (uploaded once)")
	}
	switch {
	case c.Cron == "" && c.Every == "":
		return errors.New(`no spec: pass --cron "0 2 * * *" (02:00 every day) or --every 24h`)
	case c.Cron != "" && c.Every != "":
		return errors.New("--cron and --every both given: pass one of them")
	case c.Cron != "":
		if err := checkCron(c.Cron); err != nil {
			return err
		}
	default:
		d, err := parseEvery(c.Every)
		if err != nil {
			return err
		}
		c.every = d
	}
	p, err := parseOverlap(c.Overlap)
	if err != nil {
		return err
	}
	c.overlap = p
	if c.Concurrency < 0 || c.Concurrency > api.MaxBatchConcurrency {
		return fmt.Errorf("--concurrency (%d) must be within [1, %d] (0 = the workflow's default, %d)", c.Concurrency, api.MaxBatchConcurrency, api.DefaultBatchConcurrency)
	}
	if c.ChunkTokens < 0 {
		return fmt.Errorf("--chunk-tokens (%d) must be positive (0 = the default)", c.ChunkTokens)
	}
	if c.Jitter < 0 {
		return fmt.Errorf("--jitter (%s) must not be negative", c.Jitter)
	}
	if c.CatchupWindow < 0 {
		return fmt.Errorf("--catchup-window (%s) must not be negative", c.CatchupWindow)
	}
	if c.CatchupWindow > 0 && c.CatchupWindow < 10*time.Second {
		// The server's own lower bound.
		return fmt.Errorf("--catchup-window (%s) must be at least 10s", c.CatchupWindow)
	}
	if c.TimeZone != "" {
		if _, err := time.LoadLocation(c.TimeZone); err != nil {
			return fmt.Errorf("--timezone %q is not an IANA time zone name (e.g. UTC, Europe/Paris, America/New_York)", c.TimeZone)
		}
		if c.Every != "" {
			return errors.New("--timezone applies to --cron only: an --every interval counts from the epoch in UTC")
		}
	}
	switch c.Format {
	case "", api.ManifestJSONL, api.ManifestMemAgent:
	default:
		return fmt.Errorf("--format %q is not a manifest format: use %s or %s (empty: detected)", c.Format, api.ManifestJSONL, api.ManifestMemAgent)
	}
	if c.ReportPrefix != "" {
		p, err := normalizePrefix(c.ReportPrefix)
		if err != nil {
			return fmt.Errorf("--report-prefix: %w", err)
		}
		c.ReportPrefix = p
	}
	if c.CompareWith != "" && c.CompareWith != api.CompareWithPrevious {
		p, err := normalizePrefix(c.CompareWith)
		if err != nil {
			return badRequest(fmt.Errorf("--compare-with: %w (or \"previous\", the default)", err))
		}
		c.CompareWith = p
	}
	if c.NotifyURL != "" {
		if err := api.CheckNotifyURL(c.NotifyURL); err != nil {
			return badRequest(fmt.Errorf("--notify-url: %w", err))
		}
	}
	return nil
}

// specText is the spec as shown by list and describe.
func (c *scheduleCreate) specText() string {
	if c.Cron != "" {
		s := "cron " + strings.Join(strings.Fields(c.Cron), " ")
		if c.TimeZone != "" {
			s += " " + c.TimeZone
		}
		return s
	}
	return "every " + formatEvery(c.every)
}

// spec is the Temporal schedule spec.
func (c *scheduleCreate) spec() client.ScheduleSpec {
	s := client.ScheduleSpec{Jitter: c.Jitter, TimeZoneName: c.TimeZone}
	if c.Cron != "" {
		s.CronExpressions = []string{strings.Join(strings.Fields(c.Cron), " ")}
	} else {
		s.Intervals = []client.ScheduleIntervalSpec{{Every: c.every}}
	}
	return s
}

var scheduleIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// checkScheduleID accepts ids that read well in workflow ids, S3 keys and
// shells: letters, digits, '.', '_' and '-', at most 100 characters.
func checkScheduleID(id string) error {
	switch {
	case id == "":
		return errors.New("no schedule id: pass --id NAME (e.g. --id nightly-qa)")
	case len(id) > 100:
		return fmt.Errorf("schedule id %q is %d characters long: use at most 100", clip(id, 40), len(id))
	case !scheduleIDPattern.MatchString(id):
		return fmt.Errorf("schedule id %q: use letters, digits, '.', '_' and '-', starting with a letter or digit", id)
	}
	return nil
}

// overlapPolicies names the overlap policies as the flag takes them.
var overlapPolicies = []struct {
	name   string
	policy enumspb.ScheduleOverlapPolicy
}{
	{"skip", enumspb.SCHEDULE_OVERLAP_POLICY_SKIP},
	{"buffer-one", enumspb.SCHEDULE_OVERLAP_POLICY_BUFFER_ONE},
	{"buffer-all", enumspb.SCHEDULE_OVERLAP_POLICY_BUFFER_ALL},
	{"cancel-other", enumspb.SCHEDULE_OVERLAP_POLICY_CANCEL_OTHER},
	{"terminate-other", enumspb.SCHEDULE_OVERLAP_POLICY_TERMINATE_OTHER},
	{"allow-all", enumspb.SCHEDULE_OVERLAP_POLICY_ALLOW_ALL},
}

func overlapNames() string {
	names := make([]string, len(overlapPolicies))
	for i, p := range overlapPolicies {
		names[i] = p.name
	}
	return strings.Join(names, ", ")
}

// parseOverlap maps a flag value to its policy; empty is skip.
func parseOverlap(s string) (enumspb.ScheduleOverlapPolicy, error) {
	if s == "" {
		return enumspb.SCHEDULE_OVERLAP_POLICY_SKIP, nil
	}
	for _, p := range overlapPolicies {
		if p.name == s {
			return p.policy, nil
		}
	}
	return 0, fmt.Errorf("--overlap %q is not a policy: use one of %s", s, overlapNames())
}

// overlapName is the flag value of a policy.
func overlapName(p enumspb.ScheduleOverlapPolicy) string {
	if p == enumspb.SCHEDULE_OVERLAP_POLICY_UNSPECIFIED {
		return "skip"
	}
	for _, o := range overlapPolicies {
		if o.policy == p {
			return o.name
		}
	}
	return strings.ToLower(p.String())
}

// parseEvery reads an interval: a Go duration ("24h", "90m") or whole days
// ("7d"), at least one second, in whole seconds.
func parseEvery(s string) (time.Duration, error) {
	var d time.Duration
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil || days <= 0 {
			return 0, fmt.Errorf("--every %q: want a duration such as 24h, 30m or 7d", s)
		}
		d = time.Duration(days) * 24 * time.Hour
	} else {
		v, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("--every %q: want a duration such as 24h, 30m or 7d", s)
		}
		d = v
	}
	if d < time.Second {
		return 0, fmt.Errorf("--every %q: the interval must be at least 1s", s)
	}
	if d%time.Second != 0 {
		return 0, fmt.Errorf("--every %q: use whole seconds", s)
	}
	return d, nil
}

// formatEvery renders an interval compactly: 24h, 90m, 7d (days from two
// days up, so a daily interval reads 24h).
func formatEvery(d time.Duration) string {
	switch {
	case d > 24*time.Hour && d%(24*time.Hour) == 0:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}

// cronShorthands are the named specs Temporal accepts.
var cronShorthands = []string{"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}

// checkCron turns away, before anything is uploaded, the specs that are
// wrong in shape: not five fields (minute hour day-of-month month
// day-of-week) nor one of the @daily-style shorthands, and the forms that
// have a flag of their own (time zones, @every, comments), naming the flag.
// What the fields say (ranges, steps, names) is the Temporal server's to
// judge: it refuses a bad one at create, and specError says which flag.
func checkCron(expr string) error {
	e := strings.TrimSpace(expr)
	bad := func(format string, a ...any) error {
		return fmt.Errorf("--cron %q: %s", expr, fmt.Sprintf(format, a...))
	}
	switch {
	case strings.HasPrefix(e, "TZ=") || strings.HasPrefix(e, "CRON_TZ="):
		return bad("put the time zone in --timezone, not in the expression")
	case strings.HasPrefix(e, "@every"):
		return bad("use --every for intervals")
	case strings.HasPrefix(e, "@"):
		if !slices.Contains(cronShorthands, e) {
			return bad("unknown shorthand: use one of %s, or five fields", strings.Join(cronShorthands, ", "))
		}
	case strings.Contains(e, "#"):
		return bad("comments are not supported: use --note")
	default:
		if n := len(strings.Fields(e)); n != 5 {
			return bad(`want 5 fields (minute hour day-of-month month day-of-week), e.g. "0 2 * * *" for 02:00 every day; got %d`, n)
		}
	}
	return nil
}

// specError turns the server's refusal of the schedule's spec (an
// InvalidArgument at create, "Invalid schedule spec: …") into a bad-input
// error naming the flag to change; it is nil for any other error.
func (c *scheduleCreate) specError(err error) error {
	var ia *serviceerror.InvalidArgument
	if !errors.As(err, &ia) || !strings.Contains(strings.ToLower(ia.Message), "schedule spec") {
		return nil
	}
	reason := ia.Message
	if _, r, ok := strings.Cut(reason, ": "); ok {
		reason = r
	}
	if c.Cron != "" {
		return badRequest(fmt.Errorf(`--cron %q: the Temporal server refuses it (%s): fix the fields (minute hour day-of-month month day-of-week), e.g. "0 2 * * *" for 02:00 every day`, c.Cron, reason))
	}
	return badRequest(fmt.Errorf("--every %q: the Temporal server refuses it (%s): pass a duration such as 24h, 90m or 7d", c.Every, reason))
}

// normalizePrefix checks an s3:// prefix and makes it end in '/'.
func normalizePrefix(p string) (string, error) {
	rest, ok := strings.CutPrefix(p, "s3://")
	bucket, _, _ := strings.Cut(rest, "/")
	if !ok || bucket == "" {
		return "", fmt.Errorf("%q is not an s3://bucket/prefix/ URI", p)
	}
	if !strings.HasSuffix(p, "/") {
		p += "/"
	}
	return p, nil
}

// scheduleFlags loads the configuration and binds the connection flags
// of a schedule subcommand.
func scheduleFlags(cmd *cobra.Command) (*clientconf.Config, error) {
	cfg, err := clientconf.Load()
	connectionFlags(cmd, &cfg)
	return &cfg, err
}

// oneScheduleID checks the arguments of a subcommand that takes exactly
// one schedule id.
func oneScheduleID(args []string, usage string) (string, error) {
	if len(args) != 1 {
		return "", fmt.Errorf("usage: %s", usage)
	}
	return args[0], checkScheduleID(args[0])
}

// dialSchedules connects to Temporal for a schedule subcommand.
// scheduleTarget is the start of a command on one schedule: the flags'
// error, the one ID argument (usage names the command's form), and a
// client to reach it; the caller closes the client.
func scheduleTarget(ctx context.Context, cfg *clientconf.Config, cfgErr error, args []string, usage string, stderr io.Writer) (client.Client, string, error) {
	if cfgErr != nil {
		return nil, "", cfgErr
	}
	id, err := oneScheduleID(args, usage)
	if err != nil {
		return nil, "", err
	}
	tc, err := dialSchedules(ctx, cfg, stderr)
	if err != nil {
		return nil, "", err
	}
	return tc, id, nil
}

func dialSchedules(ctx context.Context, cfg *clientconf.Config, stderr io.Writer) (client.Client, error) {
	cfg.Normalize()
	return cfg.Dial(ctx, cliLogger(stderr))
}

// scheduleError turns a server's "not found" into what to do about it.
func scheduleError(id string, err error) error {
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return fmt.Errorf("schedule %q does not exist: list them with `starter schedule list`", id)
	}
	return fmt.Errorf("schedule %s: %w", id, err)
}

func bindScheduleCreate(ctx context.Context, cmd *cobra.Command, stdout, stderr io.Writer) func(args []string) error {
	fs := cmd.Flags()
	cfg, cfgErr := scheduleFlags(cmd)
	var c scheduleCreate
	fs.StringVar(&c.ID, "id", "", "schedule `NAME` (letters, digits, '.', '_', '-'); runs are workflows batch-NAME-<time>")
	fs.StringVar(&c.Manifest, "manifest", "", "the manifest: s3://bucket/key, or a local file uploaded once")
	fs.StringVar(&c.Format, "format", "", "manifest format: jsonl or memagent (default: detected from the content)")
	fs.StringVar(&c.Cron, "cron", "", `five-field cron spec, e.g. "0 2 * * *" (02:00 every day), or @daily, @hourly…`)
	fs.StringVar(&c.Every, "every", "", "run at a fixed interval instead, e.g. 24h, 90m, 7d (counted from the epoch, UTC)")
	fs.StringVar(&c.Overlap, "overlap", "skip", "when a run is due while the last one still runs: "+overlapNames())
	fs.IntVar(&c.Concurrency, "concurrency", 0, "DocumentQA runs at once per batch (0 = the workflow's default: twice the model pool's capacity)")
	schedulingFlags(fs, &c.Priority, &c.FairnessKey, &c.FairnessWeight, api.PriorityBatch, "each batch")
	fs.IntVar(&c.ChunkTokens, "chunk-tokens", 0, "tokens per chunk (0 = the default, 5000)")
	fs.StringVar(&c.ReportPrefix, "report-prefix", "", "s3:// prefix of the reports, each run under <prefix><UTC start time>/ (default s3://BUCKET/reports/NAME/)")
	fs.BoolVar(&c.Paused, "paused", false, "create the schedule paused")
	fs.StringVar(&c.Note, "note", "", "a note shown with the schedule (e.g. why it is paused)")
	fs.DurationVar(&c.Jitter, "jitter", 0, "start each run up to this much later, at random (spreads load)")
	fs.StringVar(&c.TimeZone, "timezone", "", "IANA time zone of --cron, e.g. Europe/Paris (default UTC)")
	fs.DurationVar(&c.CatchupWindow, "catchup-window", defaultCatchupWindow, "after an outage, start missed runs at most this late")
	fs.StringVar(&c.CompareWith, "compare-with", "", `what each run's report is compared with (changes.json, a "What changed" section): "previous" (the default: the previous run's report) or the s3:// prefix of a fixed baseline report`)
	fs.StringVar(&c.NotifyURL, "notify-url", "", "POST each run's change summary as JSON to this http(s) `URL` once its report is written; only its scheme and host are ever shown")
	gate := validationGateFlags(fs)
	return func(args []string) (err error) {
		if cfgErr != nil {
			return cfgErr
		}
		pos := args
		if len(pos) > 0 {
			return badRequest(fmt.Errorf("unexpected arguments %q: quote the --cron spec", pos))
		}
		if err := c.validate(); err != nil {
			return badRequest(err)
		}
		if c.Validation, err = gate(); err != nil {
			return badRequest(err)
		}
		if err := cfg.Validate(); err != nil {
			return err
		}
		cfg.Normalize()
		if c.ReportPrefix == "" {
			c.ReportPrefix = fmt.Sprintf("s3://%s/reports/%s/", cfg.Bucket, c.ID)
		}
		tc, err := dialSchedules(ctx, cfg, stderr)
		if err != nil {
			return err
		}
		defer tc.Close()
		sc := tc.ScheduleClient()
		// Checked before the upload, so a taken id costs nothing.
		if _, err := sc.GetHandle(ctx, c.ID).Describe(ctx); err == nil {
			return scheduleExists(c.ID)
		} else if !isNotFound(err) {
			return fmt.Errorf("schedule %s: %w", c.ID, err)
		}
		store, err := s3client.New(ctx, cfg.S3())
		if err != nil {
			return err
		}
		if err := claimScheduleReports(ctx, tc, cfg.TemporalNamespace, cfg.TaskQueue, c.ReportPrefix, c.ID, stderr); err != nil {
			return err
		}
		manifest, err := uploadManifest(ctx, store, cfg.Bucket, cfg.CreateBucket, c.Manifest)
		if err != nil {
			return err
		}
		in := api.BatchQAInput{
			Manifest:     manifest,
			Format:       c.Format,
			Options:      api.ModelOptions{Model: cfg.Model, ChunkTokens: c.ChunkTokens},
			Concurrency:  c.Concurrency,
			ReportPrefix: c.ReportPrefix,
			DatedReport:  true,
			Priority:     c.Priority, FairnessKey: c.FairnessKey, FairnessWeight: c.FairnessWeight,
			CompareWith: c.CompareWith, NotifyURL: c.NotifyURL, Validation: c.Validation,
		}
		if err := in.Validate(); err != nil {
			return err
		}
		// Like `starter batch`, each run is findable by status (and model) from
		// its start; BatchQA sets MemagentBatch to its workflow id, which
		// Temporal completes only when it starts the run.
		sa := []temporal.SearchAttributeUpdate{api.StatusKey.ValueSet(api.BatchStageExpanding)}
		if in.Options.Model != "" {
			sa = append(sa, api.ModelKey.ValueSet(api.KeywordValue(in.Options.Model)))
		}
		opts := client.ScheduleOptions{
			ID:            c.ID,
			Spec:          c.spec(),
			Overlap:       c.overlap,
			CatchupWindow: c.CatchupWindow,
			Paused:        c.Paused,
			Note:          c.Note,
			Memo: map[string]any{
				scheduleMemoSpec:     c.specText(),
				scheduleMemoManifest: manifest,
				scheduleMemoReport:   c.ReportPrefix,
			},
			Action: &client.ScheduleWorkflowAction{
				ID:                    scheduleWorkflowPrefix + c.ID,
				Workflow:              api.BatchQAName,
				Args:                  []any{in},
				TaskQueue:             cfg.TaskQueue,
				Memo:                  map[string]any{scheduleRunMemoID: c.ID},
				TypedSearchAttributes: temporal.NewSearchAttributes(sa...),
				StaticSummary:         fmt.Sprintf("schedule %s · %s", c.ID, manifest),
				Priority:              in.StartPriority(),
			},
		}
		// The server judges the spec here, after the upload and the claim:
		// a spec it refuses leaves both, and creating the schedule again
		// under the same --id reuses them.
		h, err := sc.Create(ctx, opts)
		switch {
		case errors.Is(err, temporal.ErrScheduleAlreadyRunning):
			return scheduleExists(c.ID)
		case c.specError(err) != nil:
			return c.specError(err)
		case err != nil:
			return fmt.Errorf("create schedule %s: %w", c.ID, err)
		}
		fmt.Fprintf(stdout, "created schedule %s: %s, BatchQA over %s\n", h.GetID(), c.specText(), manifest)
		fmt.Fprintf(stdout, "reports: %s<UTC start time>/report.json\n", c.ReportPrefix)
		if d, err := h.Describe(ctx); err == nil && len(d.Info.NextActionTimes) > 0 && !c.Paused {
			fmt.Fprintf(stdout, "next run: %s\n", formatWhen(d.Info.NextActionTimes[0]))
		}
		if c.Paused {
			fmt.Fprintf(stdout, "paused; start it with: starter schedule unpause %s\n", c.ID)
		}
		return nil
	}
}

// claimScheduleReports has a worker make the report prefix the
// schedule's before the schedule exists (the ClaimScheduleReports
// workflow, under the worker's bucket, write prefixes and claim roots):
// from then on no workflow claims it, a dated prefix in it or a folder
// above it, and only the runs the schedule starts write and compare there.
// A prefix the schedule holds already (a schedule created again) is fine.
// With no worker polling the task queue it says so and leaves the claim to
// the schedule's first run, which makes it (BatchQA claims a scheduled
// run's report prefix for its schedule).
func claimScheduleReports(ctx context.Context, c client.Client, namespace, taskQueue, prefix, id string, stderr io.Writer) error {
	if newDiagnoser(c, namespace, "").noPollers(ctx, taskQueue) {
		fmt.Fprintf(stderr, "no worker polls task queue %s yet: the schedule's first run claims %s for it\n", taskQueue, prefix)
		return nil
	}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:        "schedule-claim-" + id,
		TaskQueue: taskQueue,
		// A worker that stops polling between the check and the start
		// leaves a claim that nobody makes: the CLI gives up, not the run.
		WorkflowExecutionTimeout: 5 * time.Minute,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		StaticSummary:            "claim " + prefix + " for schedule " + id,
	}, api.ClaimScheduleReportsName, api.ClaimScheduleReportsInput{ScheduleID: id, ReportPrefix: prefix})
	if err == nil {
		err = run.Get(ctx, nil)
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && callersToFix[appErr.Type()] {
		return badRequest(fmt.Errorf("--report-prefix: %s", strings.ReplaceAll(appErr.Message(), "leave report_prefix unset", "leave --report-prefix out")))
	}
	if err != nil {
		return fmt.Errorf("claim the report prefix %s: %w", prefix, err)
	}
	return nil
}

func scheduleExists(id string) error {
	return fmt.Errorf("schedule %q already exists; use delete first or pick another --id", id)
}

func isNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}

// scheduleRow is one schedule as `schedule list` prints it.
type scheduleRow struct {
	ID         string     `json:"id"`
	Spec       string     `json:"spec"`
	Paused     bool       `json:"paused"`
	Note       string     `json:"note,omitempty"`
	NextRun    *time.Time `json:"next_run,omitempty"`
	LastRun    string     `json:"last_run,omitempty"`
	LastStatus string     `json:"last_status,omitempty"`
	Workflow   string     `json:"workflow"`
}

func bindScheduleList(ctx context.Context, cmd *cobra.Command, stdout, stderr io.Writer) func(args []string) error {
	fs := cmd.Flags()
	cfg, cfgErr := scheduleFlags(cmd)
	all := fs.Bool("all", false, "list every schedule of the namespace, not only those that run BatchQA")
	asJSON := outputFlag(cmd, "print a JSON array instead of a table")
	return func(args []string) (err error) {
		if cfgErr != nil {
			return cfgErr
		}
		pos := args
		if len(pos) > 0 {
			return fmt.Errorf("unexpected arguments %q: list takes only flags", pos)
		}
		tc, err := dialSchedules(ctx, cfg, stderr)
		if err != nil {
			return err
		}
		defer tc.Close()
		dc := dataConverter(*cfg)
		it, err := tc.ScheduleClient().List(ctx, client.ScheduleListOptions{PageSize: 200})
		if err != nil {
			return fmt.Errorf("list schedules: %w", err)
		}
		var rows []scheduleRow
		for it.HasNext() {
			e, err := it.Next()
			if err != nil {
				return fmt.Errorf("list schedules: %w", err)
			}
			if !*all && e.WorkflowType.Name != api.BatchQAName {
				continue
			}
			r := scheduleRow{ID: e.ID, Paused: e.Paused, Note: e.Note, Workflow: e.WorkflowType.Name}
			r.Spec = memoString(dc, e.Memo, scheduleMemoSpec)
			if r.Spec == "" {
				r.Spec = renderSpec(e.Spec)
			}
			if len(e.NextActionTimes) > 0 && !e.Paused {
				t := e.NextActionTimes[0]
				r.NextRun = &t
			}
			if n := len(e.RecentActions); n > 0 {
				if wr := e.RecentActions[n-1].StartWorkflowResult; wr != nil {
					r.LastRun = wr.WorkflowID
					r.LastStatus = workflowStatus(ctx, tc, wr.WorkflowID)
				}
			}
			rows = append(rows, r)
		}
		slices.SortFunc(rows, func(a, b scheduleRow) int { return strings.Compare(a.ID, b.ID) })
		if *asJSON {
			if rows == nil {
				rows = []scheduleRow{}
			}
			return printJSON(stdout, rows)
		}
		if len(rows) == 0 {
			fmt.Fprintln(stdout, "no schedules; create one with: starter schedule create --id nightly --manifest s3://… --cron \"0 2 * * *\"")
			return nil
		}
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tSPEC\tPAUSED\tNEXT RUN\tLAST RUN")
		for _, r := range rows {
			next := "-"
			if r.NextRun != nil {
				next = formatWhen(*r.NextRun)
			}
			last := "-"
			if r.LastRun != "" {
				last = r.LastStatus
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.ID, r.Spec, yesNo(r.Paused), next, last)
		}
		return tw.Flush()
	}
}

// workflowStatus is the status of a workflow's latest run, lower case, or
// "unknown" when it cannot be read (deleted after retention, say).
func workflowStatus(ctx context.Context, c client.Client, id string) string {
	d, err := c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return "unknown"
	}
	return strings.ToLower(d.GetWorkflowExecutionInfo().GetStatus().String())
}

// dataConverter decodes memos and action arguments the way the client
// encoded them (with the payload codec when keys are configured).
func dataConverter(cfg clientconf.Config) converter.DataConverter {
	if conv, err := cfg.Converters(); err == nil && conv.Data != nil {
		return conv.Data
	}
	return converter.GetDefaultDataConverter()
}

func memoString(dc converter.DataConverter, memo *commonpb.Memo, key string) string {
	p, ok := memo.GetFields()[key]
	if !ok {
		return ""
	}
	var s string
	if err := dc.FromPayload(p, &s); err != nil {
		return ""
	}
	return s
}

// renderSpec describes a spec the server holds, for schedules made by other
// tools: calendars as cron fields, intervals as durations.
func renderSpec(s *client.ScheduleSpec) string {
	if s == nil {
		return "-"
	}
	var parts []string
	for _, c := range s.Calendars {
		f := []string{
			renderRanges(c.Minute, "0"), renderRanges(c.Hour, "0"), renderRanges(c.DayOfMonth, "*"),
			renderRanges(c.Month, "*"), renderRanges(c.DayOfWeek, "*"),
		}
		if len(c.Second) > 0 && renderRanges(c.Second, "0") != "0" {
			f = append([]string{renderRanges(c.Second, "0")}, f...)
		}
		parts = append(parts, "cron "+strings.Join(f, " "))
	}
	for _, iv := range s.Intervals {
		p := "every " + formatEvery(iv.Every)
		if iv.Offset > 0 {
			p += "+" + formatEvery(iv.Offset)
		}
		parts = append(parts, p)
	}
	for _, c := range s.CronExpressions {
		parts = append(parts, "cron "+c)
	}
	if len(parts) == 0 {
		return "-"
	}
	out := strings.Join(parts, "; ")
	if s.TimeZoneName != "" {
		out += " " + s.TimeZoneName
	}
	return out
}

// renderRanges writes ranges in cron notation. Full ranges read as "*"
// only where the server stores "*" as its full range, which is all this
// rendering needs to tell apart.
func renderRanges(rs []client.ScheduleRange, empty string) string {
	if len(rs) == 0 {
		return empty
	}
	parts := make([]string, len(rs))
	for i, r := range rs {
		end := r.End
		if end < r.Start {
			end = r.Start
		}
		p := strconv.Itoa(r.Start)
		if end != r.Start {
			p += "-" + strconv.Itoa(end)
		}
		if r.Step > 1 {
			p += "/" + strconv.Itoa(r.Step)
		}
		parts[i] = p
	}
	s := strings.Join(parts, ",")
	switch s {
	case "0-59", "0-23", "1-31", "1-12", "0-6":
		return "*"
	}
	return s
}

// scheduleView is a schedule as `schedule describe` shows it.
type scheduleView struct {
	ID            string               `json:"id"`
	Spec          string               `json:"spec"`
	TimeZone      string               `json:"time_zone,omitempty"`
	Jitter        string               `json:"jitter,omitempty"`
	Paused        bool                 `json:"paused"`
	Note          string               `json:"note,omitempty"`
	Overlap       string               `json:"overlap"`
	CatchupWindow string               `json:"catchup_window,omitempty"`
	Workflow      string               `json:"workflow"`
	WorkflowID    string               `json:"workflow_id_prefix"`
	TaskQueue     string               `json:"task_queue"`
	Input         *api.BatchQAInput    `json:"input,omitempty"`
	Actions       int                  `json:"actions"`
	Skipped       int                  `json:"skipped_overlap"`
	Missed        int                  `json:"missed_catchup_window"`
	Running       []string             `json:"running,omitempty"`
	RecentActions []scheduleActionView `json:"recent_actions"`
	NextRuns      []time.Time          `json:"next_runs"`
	CreatedAt     time.Time            `json:"created_at"`
	UpdatedAt     *time.Time           `json:"updated_at,omitempty"`
	raw           *client.ScheduleDescription
}

// scheduleActionView is one run a schedule started.
type scheduleActionView struct {
	ScheduledAt time.Time `json:"scheduled_at"`
	StartedAt   time.Time `json:"started_at"`
	WorkflowID  string    `json:"workflow_id"`
	RunID       string    `json:"run_id"`
	Status      string    `json:"status"`
}

func describeSchedule(ctx context.Context, tc client.Client, dc converter.DataConverter, id string) (*scheduleView, error) {
	d, err := tc.ScheduleClient().GetHandle(ctx, id).Describe(ctx)
	if err != nil {
		return nil, scheduleError(id, err)
	}
	v := &scheduleView{ID: id, raw: d, CreatedAt: d.Info.CreatedAt,
		Actions: d.Info.NumActions, Skipped: d.Info.NumActionsSkippedOverlap, Missed: d.Info.NumActionsMissedCatchupWindow,
		RecentActions: []scheduleActionView{}, NextRuns: d.Info.NextActionTimes}
	if d.Info.LastUpdateAt.Unix() > 0 {
		t := d.Info.LastUpdateAt
		v.UpdatedAt = &t
	}
	v.Spec = memoString(dc, d.Memo, scheduleMemoSpec)
	if v.Spec == "" {
		v.Spec = renderSpec(d.Schedule.Spec)
	}
	if s := d.Schedule.Spec; s != nil {
		v.TimeZone = s.TimeZoneName
		if s.Jitter > 0 {
			v.Jitter = formatEvery(s.Jitter)
		}
	}
	if st := d.Schedule.State; st != nil {
		v.Paused, v.Note = st.Paused, st.Note
	}
	if p := d.Schedule.Policy; p != nil {
		v.Overlap = overlapName(p.Overlap)
		if p.CatchupWindow > 0 {
			v.CatchupWindow = formatEvery(p.CatchupWindow)
		}
	}
	if a, ok := d.Schedule.Action.(*client.ScheduleWorkflowAction); ok {
		v.Workflow, v.WorkflowID, v.TaskQueue = fmt.Sprint(a.Workflow), a.ID, a.TaskQueue
		if len(a.Args) == 1 && v.Workflow == api.BatchQAName {
			if p, ok := a.Args[0].(*commonpb.Payload); ok {
				var in api.BatchQAInput
				if err := dc.FromPayload(p, &in); err == nil {
					if in.NotifyURL != "" {
						// Its path, query or userinfo may hold a token.
						in.NotifyURL = api.NotifyHost(in.NotifyURL) + "/…"
					}
					v.Input = &in
				}
			}
		}
	}
	for _, w := range d.Info.RunningWorkflows {
		v.Running = append(v.Running, w.WorkflowID)
	}
	for _, a := range d.Info.RecentActions {
		av := scheduleActionView{ScheduledAt: a.ScheduleTime, StartedAt: a.ActualTime}
		if wr := a.StartWorkflowResult; wr != nil {
			av.WorkflowID, av.RunID = wr.WorkflowID, wr.FirstExecutionRunID
			av.Status = workflowStatus(ctx, tc, wr.WorkflowID)
		}
		v.RecentActions = append(v.RecentActions, av)
	}
	return v, nil
}

func bindScheduleDescribe(ctx context.Context, cmd *cobra.Command, stdout, stderr io.Writer) func(args []string) error {
	cfg, cfgErr := scheduleFlags(cmd)
	asJSON := outputFlag(cmd, "print one JSON object instead of text")
	return func(args []string) (err error) {
		tc, id, err := scheduleTarget(ctx, cfg, cfgErr, args, "starter schedule describe [--json] ID", stderr)
		if err != nil {
			return err
		}
		defer tc.Close()
		v, err := describeSchedule(ctx, tc, dataConverter(*cfg), id)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(stdout, v)
		}
		printScheduleView(stdout, v)
		return nil
	}
}

func printScheduleView(w io.Writer, v *scheduleView) {
	fmt.Fprintf(w, "Schedule:  %s\n", v.ID)
	spec := v.Spec
	if v.Jitter != "" {
		spec += ", jitter " + v.Jitter
	}
	fmt.Fprintf(w, "Spec:      %s\n", spec)
	state := "active"
	if v.Paused {
		state = "paused"
	}
	if v.Note != "" {
		state += " (" + v.Note + ")"
	}
	fmt.Fprintf(w, "State:     %s\n", state)
	policy := "overlap " + v.Overlap
	if v.CatchupWindow != "" {
		policy += ", catch-up window " + v.CatchupWindow
	}
	fmt.Fprintf(w, "Policy:    %s\n", policy)
	fmt.Fprintf(w, "Action:    start %s %s-<time> on task queue %s\n", v.Workflow, v.WorkflowID, v.TaskQueue)
	if in := v.Input; in != nil {
		fmt.Fprintf(w, "Manifest:  %s\n", in.Manifest)
		fmt.Fprintf(w, "Reports:   %s<UTC start time>/report.json\n", in.ReportPrefix)
		var opts []string
		if in.Format != "" {
			opts = append(opts, "format "+in.Format)
		}
		if in.Concurrency > 0 {
			opts = append(opts, fmt.Sprintf("concurrency %d", in.Concurrency))
		}
		if in.Options.Model != "" {
			opts = append(opts, "model "+in.Options.Model)
		}
		if in.Options.ChunkTokens > 0 {
			opts = append(opts, fmt.Sprintf("chunk tokens %d", in.Options.ChunkTokens))
		}
		if len(opts) > 0 {
			fmt.Fprintf(w, "Options:   %s\n", strings.Join(opts, ", "))
		}
		switch {
		case in.CompareWith != "" && in.CompareWith != api.CompareWithPrevious:
			fmt.Fprintf(w, "Changes:   compared with %s\n", in.CompareWith)
		case in.DatedReport && in.ReportPrefix != "":
			fmt.Fprintln(w, "Changes:   compared with the previous run's report")
		}
		if in.NotifyURL != "" {
			fmt.Fprintf(w, "Notify:    %s\n", in.NotifyURL)
		}
		if in.Validation != nil {
			fmt.Fprintf(w, "Validation: %s\n", gateText(*in.Validation))
		}
	}
	fmt.Fprintf(w, "Runs:      %d started, %d skipped (overlap), %d missed (catch-up window)\n", v.Actions, v.Skipped, v.Missed)
	if len(v.Running) > 0 {
		fmt.Fprintf(w, "Running:   %s\n", strings.Join(v.Running, ", "))
	}
	if len(v.RecentActions) > 0 {
		fmt.Fprintln(w, "Recent runs:")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for i := len(v.RecentActions) - 1; i >= 0; i-- {
			a := v.RecentActions[i]
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", formatWhen(a.StartedAt), orDash(a.WorkflowID), orDash(a.Status))
		}
		tw.Flush()
	}
	if len(v.NextRuns) > 0 && !v.Paused {
		fmt.Fprintln(w, "Next runs:")
		for _, t := range v.NextRuns[:min(5, len(v.NextRuns))] {
			fmt.Fprintf(w, "  %s\n", formatWhen(t))
		}
	}
}

func bindSchedulePause(ctx context.Context, c *cobra.Command, stdout, stderr io.Writer) func(args []string) error {
	cmd := c.Name()
	cfg, cfgErr := scheduleFlags(c)
	note := c.Flags().String("note", "", "why (shown by describe and in the Web UI)")
	return func(args []string) (err error) {
		tc, id, err := scheduleTarget(ctx, cfg, cfgErr, args, "starter schedule "+cmd+" [--note TEXT] ID", stderr)
		if err != nil {
			return err
		}
		defer tc.Close()
		h := tc.ScheduleClient().GetHandle(ctx, id)
		if cmd == "pause" {
			n := *note
			if n == "" {
				n = "paused with starter schedule pause"
			}
			err = h.Pause(ctx, client.SchedulePauseOptions{Note: n})
		} else {
			n := *note
			if n == "" {
				n = "unpaused with starter schedule unpause"
			}
			err = h.Unpause(ctx, client.ScheduleUnpauseOptions{Note: n})
		}
		if err != nil {
			return scheduleError(id, err)
		}
		fmt.Fprintf(stdout, "%sd schedule %s\n", cmd, id)
		return nil
	}
}

func bindScheduleDelete(ctx context.Context, cmd *cobra.Command, stdout, stderr io.Writer) func(args []string) error {
	cfg, cfgErr := scheduleFlags(cmd)
	return func(args []string) (err error) {
		tc, id, err := scheduleTarget(ctx, cfg, cfgErr, args, "starter schedule delete ID", stderr)
		if err != nil {
			return err
		}
		defer tc.Close()
		if err := tc.ScheduleClient().GetHandle(ctx, id).Delete(ctx); err != nil {
			return scheduleError(id, err)
		}
		fmt.Fprintf(stdout, "deleted schedule %s (runs it started are kept; reports stay in S3)\n", id)
		return nil
	}
}

// triggerWait bounds how long trigger waits for the schedule to start the
// run it asked for.
const triggerWait = 20 * time.Second

func bindScheduleTrigger(ctx context.Context, cmd *cobra.Command, stdout, stderr io.Writer) func(args []string) error {
	fs := cmd.Flags()
	cfg, cfgErr := scheduleFlags(cmd)
	wait := fs.Bool("wait", false, "wait for the batch to finish and print its report")
	overlap := fs.String("overlap", "", "overlap policy for this run only (default the schedule's): "+overlapNames())
	asJSON := outputFlag(cmd, "with --wait, print the batch's result as JSON")
	return func(args []string) (err error) {
		if cfgErr != nil {
			return cfgErr
		}
		id, err := oneScheduleID(args, "starter schedule trigger [--wait] [--overlap POLICY] ID")
		if err != nil {
			return err
		}
		var policy enumspb.ScheduleOverlapPolicy
		if *overlap != "" {
			if policy, err = parseOverlap(*overlap); err != nil {
				return err
			}
		}
		tc, err := dialSchedules(ctx, cfg, stderr)
		if err != nil {
			return err
		}
		defer tc.Close()
		h := tc.ScheduleClient().GetHandle(ctx, id)
		before, err := h.Describe(ctx)
		if err != nil {
			return scheduleError(id, err)
		}
		seen := map[string]bool{}
		for _, a := range before.Info.RecentActions {
			if a.StartWorkflowResult != nil {
				seen[a.StartWorkflowResult.WorkflowID] = true
			}
		}
		if err := h.Trigger(ctx, client.ScheduleTriggerOptions{Overlap: policy}); err != nil {
			return scheduleError(id, err)
		}
		wfID, err := awaitTriggeredRun(ctx, h, seen, before.Info.NumActionsSkippedOverlap)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "schedule %s started %s\n", id, wfID)
		if !*wait {
			fmt.Fprintf(stdout, "%s\n", wfID)
			return nil
		}
		res, err := awaitBatch(ctx, tc, cfg.TemporalNamespace, wfID, nil, stderr)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(stdout, res)
		}
		fmt.Fprintf(stdout, "Batch:    %s: %d items, %d succeeded, %d failed, %d reused\n", wfID, res.Items, res.Succeeded, res.Failed, res.Skipped)
		fmt.Fprintf(stdout, "Report:   %s\n", res.ReportURI)
		fmt.Fprintf(stdout, "Page:     %s\n", res.HTMLURI)
		if v := res.Validation; v != nil {
			fmt.Fprintf(stdout, "Validation: %s\n", v.Text())
		}
		return nil
	}
}

// awaitTriggeredRun waits for the run a trigger started to show among the
// schedule's recent actions, and returns its workflow id. A trigger the
// overlap policy skipped is reported as such.
func awaitTriggeredRun(parent context.Context, h client.ScheduleHandle, seen map[string]bool, skippedBefore int) (string, error) {
	ctx, cancel := context.WithTimeout(parent, triggerWait)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		d, err := h.Describe(ctx)
		if err == nil {
			if id, ok := newRun(d.Info.RecentActions, seen); ok {
				return id, nil
			}
			if d.Info.NumActionsSkippedOverlap > skippedBefore {
				running := make([]string, 0, len(d.Info.RunningWorkflows))
				for _, w := range d.Info.RunningWorkflows {
					running = append(running, w.WorkflowID)
				}
				return "", fmt.Errorf("schedule %s did not start a run: its overlap policy (%s) skips a run while %s is running; pass --overlap allow-all (or buffer-one) to run anyway",
					h.GetID(), overlapName(policyOf(d)), strings.Join(running, ", "))
			}
		}
		select {
		case <-ctx.Done():
			if parent.Err() != nil {
				return "", parent.Err()
			}
			if err != nil && !errors.Is(err, context.DeadlineExceeded) {
				return "", scheduleError(h.GetID(), err)
			}
			// Temporal names a scheduled run by the second it is due, so a
			// second trigger within the same second as a run before it is
			// dropped as a duplicate.
			return "", fmt.Errorf("schedule %s: triggered, but no run started within %s (a trigger in the same second as the schedule's previous run is dropped, as both would get the same workflow id); see `starter schedule describe %s`",
				h.GetID(), triggerWait, h.GetID())
		case <-tick.C:
		}
	}
}

func policyOf(d *client.ScheduleDescription) enumspb.ScheduleOverlapPolicy {
	if d.Schedule.Policy == nil {
		return enumspb.SCHEDULE_OVERLAP_POLICY_UNSPECIFIED
	}
	return d.Schedule.Policy.Overlap
}

// newRun returns the newest recent action's workflow id not in seen.
func newRun(actions []client.ScheduleActionResult, seen map[string]bool) (string, bool) {
	for i := len(actions) - 1; i >= 0; i-- {
		if wr := actions[i].StartWorkflowResult; wr != nil && !seen[wr.WorkflowID] {
			return wr.WorkflowID, true
		}
	}
	return "", false
}

// formatWhen renders a time in the local zone, to the second.
func formatWhen(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05 MST")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
