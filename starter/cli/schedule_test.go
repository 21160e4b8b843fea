package cli

import (
	"slices"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
)

// TestScheduleCron covers the shape checks the CLI makes before it
// uploads anything; what the fields say is the server's to judge
// (TestScheduleServerRefusesBadSpec), so a spec of the right shape passes
// here whatever its values.
func TestScheduleCron(t *testing.T) {
	for _, tc := range []struct {
		expr string
		err  string // "" = valid; else a part of the error
	}{
		{"0 2 * * *", ""},
		{" 30  2 * * 1-5 ", ""},
		{"*/15 * * * *", ""},
		{"0 6 * jan-mar mon", ""},
		{"@daily", ""},
		{"@hourly", ""},
		{"0 25 * * *", ""}, // the server refuses it, not the CLI
		{"0 2 * *", "want 5 fields"},
		{"0 0 2 * * * *", "want 5 fields"},
		{"", "want 5 fields"},
		{"bad", "want 5 fields"},
		{"@every 1h", "use --every"},
		{"@fortnightly", "unknown shorthand"},
		{"TZ=Europe/Paris 0 2 * * *", "--timezone"},
		{"CRON_TZ=UTC 0 2 * * *", "--timezone"},
		{"0 2 * * * # nightly", "--note"},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			err := checkCron(tc.expr)
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("checkCron(%q) = %v, want nil", tc.expr, err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("checkCron(%q) = %v, want an error containing %q", tc.expr, err, tc.err)
			}
		})
	}
}

func TestScheduleEvery(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"24h", 24 * time.Hour, ""},
		{"90m", 90 * time.Minute, ""},
		{"7d", 7 * 24 * time.Hour, ""},
		{"1s", time.Second, ""},
		{"0d", 0, "want a duration"},
		{"daily", 0, "want a duration"},
		{"500ms", 0, "at least 1s"},
		{"-1h", 0, "at least 1s"},
		{"1.5s", 0, "whole seconds"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseEvery(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("parseEvery(%q) = %v, %v; want an error containing %q", tc.in, got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("parseEvery(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
			if back := formatEvery(got); back != tc.in {
				t.Errorf("formatEvery(%v) = %q, want %q", got, back, tc.in)
			}
		})
	}
}

func TestScheduleCreateValidate(t *testing.T) {
	valid := func() scheduleCreate {
		return scheduleCreate{ID: "nightly-qa", Manifest: "s3://memagent/manifests/m.jsonl", Cron: "0 2 * * *", Overlap: "skip"}
	}
	for _, tc := range []struct {
		name string
		edit func(*scheduleCreate)
		err  string
	}{
		{"valid cron", func(*scheduleCreate) {}, ""},
		{"valid every", func(c *scheduleCreate) { c.Cron, c.Every = "", "24h" }, ""},
		{"valid timezone", func(c *scheduleCreate) { c.TimeZone = "Europe/Paris" }, ""},
		{"no id", func(c *scheduleCreate) { c.ID = "" }, "--id"},
		{"id with a space", func(c *scheduleCreate) { c.ID = "nightly qa" }, "use letters, digits"},
		{"id with a slash", func(c *scheduleCreate) { c.ID = "a/b" }, "use letters, digits"},
		{"long id", func(c *scheduleCreate) { c.ID = strings.Repeat("a", 101) }, "at most 100"},
		{"no manifest", func(c *scheduleCreate) { c.Manifest = "" }, "--manifest"},
		{"no spec", func(c *scheduleCreate) { c.Cron = "" }, "--cron"},
		{"two specs", func(c *scheduleCreate) { c.Every = "24h" }, "pass one of them"},
		{"bad cron", func(c *scheduleCreate) { c.Cron = "0 24 * *" }, "want 5 fields"},
		{"bad every", func(c *scheduleCreate) { c.Cron, c.Every = "", "often" }, "--every"},
		{"bad overlap", func(c *scheduleCreate) { c.Overlap = "queue" }, "use one of skip, buffer-one"},
		{"negative concurrency", func(c *scheduleCreate) { c.Concurrency = -1 }, "--concurrency"},
		{"negative jitter", func(c *scheduleCreate) { c.Jitter = -time.Second }, "--jitter"},
		{"bad timezone", func(c *scheduleCreate) { c.TimeZone = "Mars/Olympus" }, "IANA"},
		{"timezone with every", func(c *scheduleCreate) { c.Cron, c.Every, c.TimeZone = "", "24h", "UTC" }, "--cron only"},
		{"bad format", func(c *scheduleCreate) { c.Format = "csv" }, "--format"},
		{"bad prefix", func(c *scheduleCreate) { c.ReportPrefix = "/tmp/reports" }, "--report-prefix"},
		{"prefix without a bucket", func(c *scheduleCreate) { c.ReportPrefix = "s3:///reports" }, "--report-prefix"},
		{"prefix at a bucket's root", func(c *scheduleCreate) { c.ReportPrefix = "s3://reports" }, ""},
		{"short catch-up window", func(c *scheduleCreate) { c.CatchupWindow = time.Second }, "at least 10s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := valid()
			tc.edit(&c)
			err := c.validate()
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("validate() = %v, want nil", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("validate() = %v, want an error containing %q", err, tc.err)
			}
		})
	}
}

func TestScheduleCreateSpec(t *testing.T) {
	c := scheduleCreate{ID: "n", Manifest: "s3://b/m", Cron: " 0  2 * * * ", TimeZone: "Europe/Paris", Jitter: time.Minute, ReportPrefix: "s3://b/r"}
	if err := c.validate(); err != nil {
		t.Fatal(err)
	}
	if got, want := c.specText(), "cron 0 2 * * * Europe/Paris"; got != want {
		t.Errorf("specText = %q, want %q", got, want)
	}
	s := c.spec()
	if !slices.Equal(s.CronExpressions, []string{"0 2 * * *"}) || s.TimeZoneName != "Europe/Paris" || s.Jitter != time.Minute || len(s.Intervals) != 0 {
		t.Errorf("spec = %+v", s)
	}
	if c.ReportPrefix != "s3://b/r/" {
		t.Errorf("report prefix = %q, want it ending in /", c.ReportPrefix)
	}
	if c.overlap != enumspb.SCHEDULE_OVERLAP_POLICY_SKIP {
		t.Errorf("default overlap = %v, want skip", c.overlap)
	}

	e := scheduleCreate{ID: "n", Manifest: "s3://b/m", Every: "36h", Overlap: "buffer-one"}
	if err := e.validate(); err != nil {
		t.Fatal(err)
	}
	if got := e.specText(); got != "every 36h" {
		t.Errorf("specText = %q, want every 36h", got)
	}
	if s := e.spec(); len(s.Intervals) != 1 || s.Intervals[0].Every != 36*time.Hour || len(s.CronExpressions) != 0 {
		t.Errorf("spec = %+v", s)
	}
	if e.overlap != enumspb.SCHEDULE_OVERLAP_POLICY_BUFFER_ONE {
		t.Errorf("overlap = %v, want buffer-one", e.overlap)
	}
}

func TestScheduleOverlapNames(t *testing.T) {
	for _, p := range overlapPolicies {
		got, err := parseOverlap(p.name)
		if err != nil || got != p.policy {
			t.Errorf("parseOverlap(%q) = %v, %v; want %v", p.name, got, err, p.policy)
		}
		if n := overlapName(p.policy); n != p.name {
			t.Errorf("overlapName(%v) = %q, want %q", p.policy, n, p.name)
		}
	}
	if n := overlapName(enumspb.SCHEDULE_OVERLAP_POLICY_UNSPECIFIED); n != "skip" {
		t.Errorf("unspecified overlap reads %q, want skip (the server's default)", n)
	}
}

func TestScheduleRenderSpec(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec *client.ScheduleSpec
		want string
	}{
		{"nil", nil, "-"},
		{"calendar", &client.ScheduleSpec{Calendars: []client.ScheduleCalendarSpec{{
			Second: []client.ScheduleRange{{Start: 0}}, Minute: []client.ScheduleRange{{Start: 30}},
			Hour: []client.ScheduleRange{{Start: 2}}, DayOfMonth: []client.ScheduleRange{{Start: 1, End: 31}},
			Month: []client.ScheduleRange{{Start: 1, End: 12}}, DayOfWeek: []client.ScheduleRange{{Start: 1, End: 5}},
		}}, TimeZoneName: "UTC"}, "cron 30 2 * * 1-5 UTC"},
		{"steps and lists", &client.ScheduleSpec{Calendars: []client.ScheduleCalendarSpec{{
			Minute: []client.ScheduleRange{{Start: 0, End: 59, Step: 15}}, Hour: []client.ScheduleRange{{Start: 1}, {Start: 13}},
		}}}, "cron 0-59/15 1,13 * * *"},
		{"interval", &client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: 24 * time.Hour, Offset: 2 * time.Hour}}}, "every 24h+2h"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := renderSpec(tc.spec); got != tc.want {
				t.Errorf("renderSpec = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestScheduleNewRun(t *testing.T) {
	act := func(id string) client.ScheduleActionResult {
		return client.ScheduleActionResult{StartWorkflowResult: &client.ScheduleWorkflowExecution{WorkflowID: id}}
	}
	seen := map[string]bool{"batch-n-1": true, "batch-n-2": true}
	if id, ok := newRun([]client.ScheduleActionResult{act("batch-n-1"), act("batch-n-2")}, seen); ok {
		t.Errorf("newRun found %q among runs seen before", id)
	}
	id, ok := newRun([]client.ScheduleActionResult{act("batch-n-2"), act("batch-n-3"), {}}, seen)
	if !ok || id != "batch-n-3" {
		t.Errorf("newRun = %q, %v; want batch-n-3", id, ok)
	}
}

func TestScheduleInterspersedFlags(t *testing.T) {
	cmd := parsedCommand(t, "schedule", "trigger", "nightly", "--json", "--overlap", "a b", "--", "-x")
	asJSON, _ := cmd.Flags().GetBool("json")
	note, _ := cmd.Flags().GetString("overlap")
	pos := cmd.Flags().Args()
	if !asJSON || note != "a b" || !slices.Equal(pos, []string{"nightly", "-x"}) {
		t.Errorf("json=%v overlap=%q pos=%q; want true, \"a b\", [nightly -x]", asJSON, note, pos)
	}
}

// The subcommands reject bad input before dialing anything: these run
// with no server.
func TestScheduleCommandsCheckInputFirst(t *testing.T) {
	t.Setenv("TEMPORAL_ADDRESS", "127.0.0.1:1") // nothing listens here
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"schedule"}, "no subcommand"},
		{[]string{"schedule", "frobnicate"}, "unknown subcommand"},
		{[]string{"schedule", "create", "--manifest", "m.jsonl", "--cron", "0 2 * * *"}, "--id"},
		{[]string{"schedule", "create", "--id", "n", "--manifest", "m.jsonl", "--cron", "0 2 * *"}, "want 5 fields"},
		{[]string{"schedule", "create", "--id", "n", "--manifest", "m.jsonl", "--every", "24h", "--overlap", "never"}, "--overlap"},
		{[]string{"schedule", "create", "--id", "n", "--manifest", "m.jsonl", "--cron", "0", "2", "*", "*", "*"}, "quote the --cron"},
		{[]string{"schedule", "describe"}, "usage"},
		{[]string{"schedule", "describe", "a", "b"}, "usage"},
		{[]string{"schedule", "pause", "bad id"}, "use letters"},
		{[]string{"schedule", "trigger", "n", "--overlap", "later"}, "--overlap"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, _, err := runCLI(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("run(%q) = %v, want an error containing %q", tc.args, err, tc.err)
			}
		})
	}
}
