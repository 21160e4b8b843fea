package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/google/pprof/profile"
)

// What a worker's CPU per chunk update is made of. With -cost-profile each
// phase's worker process writes a CPU profile of the phase
// (workerProfileEnv, started by SIGUSR1 at workerProfileAtSignalEnv); the bench reads it afterwards and puts every sample
// in one part by its stack. Nothing of this runs in a worker that writes no
// profile: the attribution is the bench's, from stacks alone, so the
// production path carries no label or hook for it.

// costGroup is what a part belongs to.
type costGroup int

const (
	groupMemagent      costGroup = iota // memagent's own work: what a chunk update is for
	groupOrchestration                  // the Temporal SDK, gRPC, polls, workflow tasks, heartbeats
	groupGC                             // the garbage collector, whoever allocated
	groupOther                          // telemetry, and the runtime's scheduler, timers and network poller
)

func (g costGroup) String() string {
	switch g {
	case groupMemagent:
		return "memagent's work"
	case groupOrchestration:
		return "orchestration"
	case groupGC:
		return "garbage collection"
	default:
		return "neither"
	}
}

// costPart is one row of the attribution, in the order printed.
type costPart struct {
	Group costGroup
	Name  string
}

var (
	partIndexing   = costPart{groupMemagent, "indexing documents (PrepareDocument: reading and tokenizing each document once)"}
	partModel      = costPart{groupMemagent, "the model call (go-openai: request and response JSON; memagent's inference pool)"}
	partPrompt     = costPart{groupMemagent, "prompt rendering, memory and answer parsing, token counts (internal/memagent, the tokenizer)"}
	partS3         = costPart{groupMemagent, "S3 requests (the chunk's read, the trace; aws-sdk-go-v2)"}
	partCheckpoint = costPart{groupMemagent, "checkpoints (write, find) and the next chunk's read-ahead"}
	partHTTP       = costPart{groupMemagent, "HTTP connections' own goroutines (net/http, model and S3)"}
	partOwn        = costPart{groupMemagent, "memagent's other activity code (answer, grounding, results, the activities' glue)"}
	partGzip       = costPart{groupOrchestration, "gRPC gzip (the SDK's default compression of every request and reply)"}
	partHeartbeat  = costPart{groupOrchestration, "heartbeats (details encoded, the gRPC call)"}
	partWorkflow   = costPart{groupOrchestration, "workflow tasks (replaying and running workflow code, completing the task)"}
	partPoll       = costPart{groupOrchestration, "task polls (workflow and activity)"}
	partActivity   = costPart{groupOrchestration, "activity tasks' dispatch and completion"}
	partSDK        = costPart{groupOrchestration, "other Temporal SDK and gRPC (connections, payload conversion, interceptors)"}
	partGC         = costPart{groupGC, "garbage collection (background marking, assists, sweeping)"}
	partTelemetry  = costPart{groupOther, "telemetry (OpenTelemetry spans and metrics)"}
	partRuntime    = costPart{groupOther, "runtime not under any of the above (scheduler, timers, network poller, syscalls)"}
)

// costParts lists every part in the order printed.
var costParts = []costPart{partIndexing, partModel, partPrompt, partS3, partCheckpoint, partHTTP, partOwn,
	partGzip, partHeartbeat, partWorkflow, partPoll, partActivity, partSDK, partGC, partTelemetry, partRuntime}

// gcFrame reports whether a function is the garbage collector's.
func gcFrame(fn string) bool {
	for _, p := range []string{"runtime.gcBgMarkWorker", "runtime.gcAssistAlloc", "runtime.gcDrain", "runtime.bgsweep",
		"runtime.bgscavenge", "runtime.markroot", "runtime.scanobject", "runtime.sweepone", "runtime.gcStart", "runtime.gcMarkDone", "runtime.gcMarkTermination"} {
		if strings.HasPrefix(fn, p) {
			return true
		}
	}
	return false
}

// owner is who a frame's function belongs to: "memagent", "openai",
// "aws", "sdk", "otel", or "" for the standard library and the runtime,
// which work for whoever called them.
func owner(fn string) string {
	switch {
	case strings.HasPrefix(fn, "github.com/memagent/memagent/workflows"):
		return "sdk"
	case strings.HasPrefix(fn, "github.com/memagent/memagent/internal/inference"), strings.HasPrefix(fn, "github.com/sashabaranov/go-openai"):
		return "openai"
	case strings.HasPrefix(fn, "github.com/memagent/memagent/internal/memagent"), strings.HasPrefix(fn, "github.com/memagent/memagent/internal/tokenizer"),
		strings.HasPrefix(fn, "github.com/tiktoken-go"), strings.HasPrefix(fn, "github.com/pkoukk/tiktoken-go"):
		return "prompt"
	case strings.HasPrefix(fn, "github.com/memagent/memagent/internal/telemetry"), strings.HasPrefix(fn, "go.opentelemetry.io"):
		return "otel"
	case strings.HasPrefix(fn, "github.com/memagent/memagent/internal/s3"), strings.HasPrefix(fn, "github.com/aws/"):
		return "aws"
	case strings.HasPrefix(fn, "github.com/memagent/memagent"):
		return "memagent"
	case strings.HasPrefix(fn, "go.temporal.io/"), strings.HasPrefix(fn, "google.golang.org/grpc"), strings.HasPrefix(fn, "google.golang.org/protobuf"),
		strings.HasPrefix(fn, "golang.org/x/net/http2"), strings.HasPrefix(fn, "github.com/gogo/"), strings.HasPrefix(fn, "github.com/nexus-rpc"):
		return "sdk"
	}
	return ""
}

// classify puts one sample's stack (function names, leaf first) in a part.
// The garbage collector, gRPC's gzip and heartbeats are told by any frame;
// everything else by the nearest frame to the leaf that has an owner, so
// that JSON encoding for go-openai counts as the model call and protobuf
// encoding for a heartbeat as the SDK's.
func classify(stack []string) costPart {
	any := func(subs ...string) bool {
		for _, fn := range stack {
			for _, s := range subs {
				if strings.Contains(fn, s) {
					return true
				}
			}
		}
		return false
	}
	for _, fn := range stack {
		if gcFrame(fn) {
			return partGC
		}
	}
	if any("compress/flate.", "compress/gzip.") && any("google.golang.org/grpc") {
		return partGzip
	}
	if any("temporalInvoker", "RecordActivityHeartbeat", "activity.RecordHeartbeat") {
		return partHeartbeat
	}
	own := ""
	for _, fn := range stack {
		if own = owner(fn); own != "" {
			break
		}
	}
	switch own {
	case "memagent", "openai", "prompt", "aws":
		switch {
		case any("activities.(*Activities).prepareDocument"):
			return partIndexing
		case any("heckpoint", "readAhead", "ReadAhead"):
			return partCheckpoint
		}
		switch own {
		case "openai":
			return partModel
		case "prompt":
			return partPrompt
		case "aws":
			return partS3
		}
		return partOwn
	case "sdk":
		switch {
		case any("workflowTaskProcessor", "memagent/memagent/workflows."):
			return partWorkflow
		case any(").PollTask", ").doPoll", ").poll"):
			return partPoll
		case any("activityTaskPoller).ProcessTask", "activityTaskHandler", "reportActivityComplete", "convertActivityResultToRespondRequest"):
			return partActivity
		}
		return partSDK
	case "otel":
		return partTelemetry
	}
	if any("net/http.") {
		return partHTTP
	}
	return partRuntime
}

// costAttribution is one worker process's CPU profile, by part.
type costAttribution struct {
	Total time.Duration
	Parts map[costPart]time.Duration
}

// attribute reads a CPU profile and sums its samples by part.
func attribute(r io.Reader) (costAttribution, error) {
	p, err := profile.Parse(r)
	if err != nil {
		return costAttribution{}, err
	}
	vi := -1
	for i, st := range p.SampleType {
		if st.Type == "cpu" && st.Unit == "nanoseconds" {
			vi = i
		}
	}
	if vi < 0 {
		return costAttribution{}, fmt.Errorf("profile has no cpu nanoseconds")
	}
	a := costAttribution{Parts: map[costPart]time.Duration{}}
	var stack []string
	for _, s := range p.Sample {
		stack = stack[:0]
		for _, loc := range s.Location {
			// Inlined functions come first in a location's lines.
			for _, l := range loc.Line {
				if l.Function != nil {
					stack = append(stack, l.Function.Name)
				}
			}
		}
		d := time.Duration(s.Value[vi])
		a.Parts[classify(stack)] += d
		a.Total += d
	}
	return a, nil
}

// attributeFile is attribute of a profile file.
func attributeFile(path string) (costAttribution, error) {
	f, err := os.Open(path)
	if err != nil {
		return costAttribution{}, err
	}
	defer f.Close()
	a, err := attribute(f)
	if err != nil {
		return a, fmt.Errorf("profile %s: %w", path, err)
	}
	return a, nil
}

// group is the sum of a group's parts.
func (a costAttribution) group(g costGroup) time.Duration {
	var d time.Duration
	for p, v := range a.Parts {
		if p.Group == g {
			d += v
		}
	}
	return d
}

// share is part of the profile's total, 0 for an empty profile.
func (a costAttribution) share(d time.Duration) float64 {
	if a.Total <= 0 {
		return 0
	}
	return d.Seconds() / a.Total.Seconds()
}

// writeCostAttribution writes the attribution of each profiled phase: the
// profile's shares applied to the worker's CPU per chunk update (or per
// activity) as /proc reads it.
func writeCostAttribution(w io.Writer, r costResult) {
	type phase struct {
		name string
		f    costFigures
		a    costAttribution
	}
	var phases []phase
	for _, p := range []phase{{"memagent batch, per chunk update", r.Batch, r.BatchProfile}, {"bare activity, per activity", r.Bare, r.BareProfile},
		{"bare model call, per call", r.Model, r.ModelProfile}} {
		if p.a.Total > 0 && p.f.ChunkUpdates > 0 {
			phases = append(phases, p)
		}
	}
	if len(phases) == 0 {
		return
	}
	fmt.Fprintf(w, "What the worker's CPU is made of (`-cost-profile`): each phase's worker process wrote a CPU profile of the phase, from just before its first reading to its end (%s of samples for the batch's worker), and the bench put every sample in one part by its stack: the garbage collector, gRPC's gzip and heartbeats by any frame, the rest by the frame nearest the leaf that belongs to a known package (memagent's activities, go-openai, aws-sdk-go-v2, the Temporal SDK, gRPC, protobuf, OpenTelemetry); the standard library and the runtime count for whoever called them. A part's figure is its share of the profile times the worker's CPU per chunk update (per activity for the baselines) in the table above.\n\n",
		r.BatchProfile.Total.Round(10*time.Millisecond))
	fmt.Fprint(w, "| part |")
	for _, p := range phases {
		fmt.Fprintf(w, " %s |", p.name)
	}
	fmt.Fprint(w, "\n|---|")
	for range phases {
		fmt.Fprint(w, "---|")
	}
	fmt.Fprintln(w)
	cell := func(p phase, d time.Duration) string {
		return fmt.Sprintf("%.2f ms (%.0f%%)", p.a.share(d)*p.f.perMS(p.f.Worker), 100*p.a.share(d))
	}
	for _, g := range []costGroup{groupMemagent, groupOrchestration, groupGC, groupOther} {
		fmt.Fprintf(w, "| **%s** |", g)
		for _, p := range phases {
			fmt.Fprintf(w, " **%s** |", cell(p, p.a.group(g)))
		}
		fmt.Fprintln(w)
		if g == groupGC {
			continue
		}
		for _, part := range costParts {
			if part.Group != g {
				continue
			}
			fmt.Fprintf(w, "| %s |", part.Name)
			for _, p := range phases {
				fmt.Fprintf(w, " %s |", cell(p, p.a.Parts[part]))
			}
			fmt.Fprintln(w)
		}
	}
	fmt.Fprint(w, "\nThe worker's peak resident set (VmHWM) at each phase's end:")
	for i, p := range phases {
		sep := ","
		if i == 0 {
			sep = ""
		}
		fmt.Fprintf(w, "%s %s %.0f MB", sep, strings.SplitN(p.name, ",", 2)[0], float64(p.f.WorkerPeakRSS)/(1<<20))
	}
	fmt.Fprintln(w, ".")
	b := phases[0]
	if b.f.ChunkUpdates != r.Batch.ChunkUpdates || r.BareProfile.Total <= 0 {
		fmt.Fprintln(w)
		return
	}
	orch := b.a.share(b.a.group(groupOrchestration)) * b.f.perMS(b.f.Worker)
	bare := r.Bare.perMS(r.Bare.Worker)
	bareOrch := r.BareProfile.share(r.BareProfile.group(groupOrchestration)) * bare
	fmt.Fprintf(w, "\nmemagent's orchestration a chunk update, %.2f ms, is %.2f× the bare activity's whole worker CPU (%.2f ms, all of it orchestration, GC and runtime; %.2f ms of it in the orchestration rows) and %.2f× its orchestration rows alone. Orchestration plus GC plus the rest, without memagent's work: %.2f ms, %.2f× the bare activity.\n\n",
		orch, orch/bare, bare, bareOrch, orch/max(bareOrch, 1e-9),
		(1-b.a.share(b.a.group(groupMemagent)))*b.f.perMS(b.f.Worker), (1-b.a.share(b.a.group(groupMemagent)))*b.f.perMS(b.f.Worker)/bare)
}
