// Command bench measures memagent side by side in one run and writes the
// tables to BENCHMARKS.md:
//
//	go run ./bench                 # everything
//	go run ./bench -only overhead  # one section, printed only: tokenizer, overhead, pool, scale, review, corpus, batch, convert
//	bench/postgres.sh overhead pool  # those sections on Temporal with PostgreSQL (-temporal)
//	go run ./bench -only cost; bench/postgres.sh cost  # CPU, statements, events, S3 requests per chunk
//	go run ./bench -only cost -cost-doc-tokens 100000 -cost-items 64 -cost-model-call  # long documents, and a bare model call beside the bare activity
//
// Figures are ratios of runs made in the same process on the same machine,
// because absolute times on shared machines are noisy. The model is the
// inference simulator, so nothing here measures a model.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/internal/dev/devenv"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/pluginkit"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/tokenizer"
	"github.com/memagent/memagent/worker/config"
	"github.com/memagent/memagent/worker/workerapp"
)

const benchQuestion = docgen.Question

// benchEnv is the embedded stack and the clients every section shares.
type benchEnv struct {
	dev      *devenv.Env
	cfg      config.Config
	store    *s3store.Store
	temporal client.Client
	tok      memagent.Tokenizer
	logger   *slog.Logger
	// server says which Temporal server the figures come from.
	server benchServer
}

// serverSettings names the settings of the Temporal server every figure
// below was measured on; a self-hosted cluster has other defaults
// (docs/DEPLOY.md says which it needs).
const serverSettings = "Every figure that involves Temporal was measured on the embedded dev server (`go.temporal.io/server` v1.32.0, SQLite in memory, one process with the worker, S3 and the simulator on loopback, 2 cores) with its development settings, not a production cluster's defaults: eager activity execution on (`system.enableActivityEagerExecution`), `history.transferProcessorMaxPollRPS` 1000 (default 20, which adds up to 50 ms a step), `history.workflowIdReuseMinimalInterval` 0 (default 1 s between runs of one id, continue-as-new included), the new matcher with fairness (`matching.useNewMatcher`, `matching.enableFairness`), one partition a task queue (`matching.numTaskqueueReadPartitions` and `matching.numTaskqueueWritePartitions` 1, default 4; from 2026-11-27)."

func main() {
	if pdf := os.Getenv(ocrProcessEnv); pdf != "" {
		if err := runOCRProcess(pdf); err != nil {
			fmt.Fprintln(os.Stderr, "bench ocr:", err)
			os.Exit(1)
		}
		return
	}
	if pdf := os.Getenv(convertProcessEnv); pdf != "" {
		if err := runConvertProcess(pdf); err != nil {
			fmt.Fprintln(os.Stderr, "bench convert:", err)
			os.Exit(1)
		}
		return
	}
	if os.Getenv(temporalProcessEnv) == "1" {
		if err := runTemporalProcess(); err != nil {
			fmt.Fprintln(os.Stderr, "bench temporal:", err)
			os.Exit(1)
		}
		return
	}
	if os.Getenv(workerProcessEnv) == "1" {
		if err := runWorkerProcess(); err != nil {
			fmt.Fprintln(os.Stderr, "bench worker:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	only := fs.String("only", "", "run one section: tokenizer, overhead, heartbeat, pool, interactive, priority, fairness, scale, review, corpus, batch, convert, ocr or cost (cost runs only when named)")
	out := fs.String("out", "BENCHMARKS.md", "markdown report to write ('' = stdout only)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run")
	overheadTokens := fs.Int("overhead-tokens", 500_000, "document length for the overhead comparison")
	scaleSizes := fs.String("scale", "500000,1000000,2000000,3500000,10000000", "document lengths (tokens) for the scale section")
	batchPollers := fs.String("batch-pollers", "2,8", "workflow task pollers of the batch section's variants; the first is the baseline")
	batchRounds := fs.Int("batch-rounds", 2, "runs of each batch variant, in alternating order")
	convertRounds := fs.Int("convert-rounds", 3, "conversions of the 1,000-page PDF by each converter, alternating")
	ocrSource := fs.String("ocr-source", defaultOCRSource(), "the PDF whose pages the ocr section scans (gnuplot's manual, as scripts/manuals.sh downloads it)")
	priorityRows := fs.String("priority-rows", "", "the priority section's rows to run, by index from 0 (comma-separated; default all; the idle row, 0, always runs)")
	poolCases := fs.String("pool-cases", "", "the pool section's batches to run, by index from 0 (comma-separated; default all)")
	poolMixed := fs.Int("pool-mixed-items", mixedItems, "items of the pool section's batch of mixed lengths")
	poolCarry := fs.Int("pool-carry-after", 0, "carry_after_seconds of the pool section's batches (0: BatchQA's default)")
	costItems := fs.Int("cost-items", 500, "items of the cost section's batch")
	costDocTokens := fs.Int("cost-doc-tokens", 0, "the cost section's long-document mode: its batch asks over documents of this many tokens each (100000: 20 chunks an item) instead of the pool section's mixed lengths (0)")
	costModelCall := fs.Bool("cost-model-call", false, "add the cost section's second baseline, a bare model call: an activity that makes a chunk update's model call (a prompt of its size) with a plain OpenAI client")
	costProfile := fs.Bool("cost-profile", false, "the cost section's attribution: each phase's worker writes a CPU profile, and the section splits the worker's CPU per chunk update into memagent's work, orchestration and GC")
	costCompression := fs.String("cost-temporal-compression", "", "the cost section's workers' MEMAGENT_TEMPORAL_COMPRESSION: gzip or none; empty = the default, gzip")
	costWorkerEnv := fs.String("cost-worker-env", "", "the cost section's workers' more settings, NAME=VALUE separated by spaces (GOGC=200, say), given to no other process")
	var procs costProcs
	var ext externalTemporal
	fs.StringVar(&ext.Address, "temporal", "", "host:port of a Temporal server to measure on instead of the embedded one (with -only overhead or pool; bench/postgres.sh starts one on PostgreSQL); S3, the simulator and the workers stay in process")
	fs.StringVar(&ext.Namespace, "temporal-namespace", "default", "namespace on the -temporal server (registered there; its search attributes are added)")
	fs.StringVar(&ext.DB, "temporal-db", "", "the -temporal server's database as the report names it, e.g. 'PostgreSQL 15.18' (default: the store the server reports)")
	fs.StringVar(&ext.DynamicConfig, "temporal-dynamic-config", "", "the dynamic config file the -temporal server runs with, whose settings the report names")
	fs.IntVar(&procs.TemporalPID, "temporal-pid", 0, "process id of the -temporal server, whose CPU the cost section reads")
	fs.IntVar(&procs.PostgresPID, "postgres-pid", 0, "process id of the -temporal server's PostgreSQL postmaster, whose CPU and its backends' the cost section reads")
	fs.StringVar(&procs.PostgresURL, "postgres-url", "", "a URL psql connects to the -temporal server's PostgreSQL with, for pg_stat_statements (loaded with shared_preload_libraries) and pg_stat_database")
	command := fs.String("command", "", "the command the report's header names (default: go run ./bench and these arguments)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch *only {
	case "", "tokenizer", "overhead", "heartbeat", "pool", "interactive", "priority", "fairness", "scale", "review", "corpus", "batch", "convert", "ocr", "cost":
	default:
		return fmt.Errorf("-only %q: want tokenizer, overhead, heartbeat, pool, interactive, priority, fairness, scale, review, corpus, batch, convert, ocr or cost", *only)
	}
	if ext.Address != "" && !slices.Contains(externalSections, *only) {
		return fmt.Errorf("-temporal needs -only %s: the other sections describe the embedded stack", strings.Join(externalSections, " or -only "))
	}
	variants, err := parseBatchVariants(*batchPollers)
	if err != nil {
		return err
	}
	if *batchRounds < 1 {
		return fmt.Errorf("-batch-rounds (%d) must be at least 1", *batchRounds)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	// Conversion needs no stack.
	var env *benchEnv
	if *only == "cost" && ext.Address == "" {
		// The embedded server in a process of its own, so that its CPU
		// is apart from the bench's S3 and simulator.
		tp, err := startTemporalProcess(ctx)
		if err != nil {
			return err
		}
		defer tp.stop()
		procs.TemporalPID = tp.cmd.Process.Pid
		if env, err = newBenchEnv(ctx, externalTemporal{Address: tp.Address, Namespace: "default"}); err != nil {
			return err
		}
		env.server = embeddedServer
		env.server.Stack = "the embedded server (Temporal with SQLite in memory, its development settings) in a process of its own"
		defer env.close()
	} else if *only != "convert" && *only != "ocr" {
		if env, err = newBenchEnv(ctx, ext); err != nil {
			return err
		}
		defer env.close()
	}
	if *only == "cost" && procs.TemporalPID == 0 {
		return fmt.Errorf("-only cost on -temporal needs -temporal-pid (bench/postgres.sh cost passes it)")
	}

	settings := serverSettings
	if env != nil {
		settings = env.server.Settings
	}
	if *command == "" {
		*command = "go run ./bench" + argsSuffix(args)
	}
	var report strings.Builder
	fmt.Fprintf(&report, "# Benchmarks\n\nCommand: `%s` on %s. The model is the inference simulator: these figures measure the system around the model, never a model. Every run reads all its chunks (`reuse: none`), except in the corpus section, which measures what memory checkpoints save.\n\n%s\n\n",
		*command, time.Now().UTC().Format("2006-01-02"), settings)
	want := func(s string) bool { return *only == "" || *only == s }
	if want("tokenizer") {
		fmt.Fprintln(&report, "## Tokenizers\n\nTokens per second on one core (one goroutine), over a generated English document of 1M tokens cut into 64 KiB pieces, as the chunk planner feeds them.")
		fmt.Fprintln(&report)
		fmt.Fprintln(&report, "| tokenizer | tokens | seconds | tokens/s per core |")
		fmt.Fprintln(&report, "|---|---|---|---|")
		text := docgen.Needle(env.tok, 1_000_000, 0.5, 9)
		for _, name := range []string{tokenizer.Qwen, tokenizer.CL100K} {
			n, d, err := tokenizerThroughput(name, text)
			if err != nil {
				return err
			}
			fmt.Fprintf(&report, "| %s | %d | %.2f | %.2f M |\n", name, n, d.Seconds(), float64(n)/d.Seconds()/1e6)
		}
		fmt.Fprintln(&report)
	}
	if want("overhead") {
		if err := writeOverhead(ctx, env, &report, *overheadTokens); err != nil {
			return err
		}
	}
	if want("heartbeat") {
		rows, err := runHeartbeat(ctx, env)
		if err != nil {
			return fmt.Errorf("heartbeat: %w", err)
		}
		writeHeartbeat(&report, rows)
	}
	if want("pool") {
		cases, err := parseIndexes(*poolCases)
		if err != nil {
			return fmt.Errorf("-pool-cases: %w", err)
		}
		rows, err := runUtilisation(ctx, env, cases, *poolMixed, *poolCarry)
		if err != nil {
			return fmt.Errorf("pool: %w", err)
		}
		writeUtilisation(&report, rows, env.server.heading("Pool utilisation"))
	}
	if want("interactive") {
		rows, err := runInteractive(ctx, env)
		if err != nil {
			return fmt.Errorf("interactive: %w", err)
		}
		writeInteractive(&report, rows)
	}
	if want("priority") {
		only, err := parseIndexes(*priorityRows)
		if err != nil {
			return fmt.Errorf("-priority-rows: %w", err)
		}
		for i := range only {
			if i >= len(serverPrioVariants) {
				return fmt.Errorf("-priority-rows: no row %d: the section has rows 0 to %d", i, len(serverPrioVariants)-1)
			}
		}
		rows, err := runServerPriority(ctx, env, only)
		if err != nil {
			return fmt.Errorf("priority: %w", err)
		}
		writeServerPriority(&report, rows)
	}
	if *only == "cost" {
		r, err := runCost(ctx, env, procs, costOptions{Items: *costItems, DocTokens: *costDocTokens, ModelCall: *costModelCall, Profile: *costProfile, Compression: *costCompression, WorkerEnv: strings.Fields(*costWorkerEnv)})
		if err != nil {
			return fmt.Errorf("cost: %w", err)
		}
		writeCost(&report, env, r)
	}
	if want("fairness") {
		rows, err := runFairness(ctx, env)
		if err != nil {
			return fmt.Errorf("fairness: %w", err)
		}
		writeFairness(&report, rows)
	}
	if want("scale") {
		fmt.Fprintln(&report, "## Scale\n\nOne question over generated documents (Qwen tokens, chunks of 5,000), each with a fresh worker process against one embedded stack; the simulator answers at once, so wall time is the system's own cost. S3 read counts every byte the S3 server sent (the document streamed once to index it, then each chunk's ranged read).")
		fmt.Fprintln(&report)
		fmt.Fprintln(&report, "| tokens | bytes | chunks | wall | ms per chunk | worker peak RSS | runs | largest run history | S3 read ÷ document | answer |")
		fmt.Fprintln(&report, "|---|---|---|---|---|---|---|---|---|---|")
		for _, f := range strings.Split(*scaleSizes, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				return fmt.Errorf("-scale: %w", err)
			}
			r, err := runScale(ctx, env, n)
			if err != nil {
				return fmt.Errorf("scale %d: %w", n, err)
			}
			fmt.Fprintf(&report, "| %d | %d | %d | %.1f s | %.1f | %.0f MB | %d | %d events, %.0f KB | %.2f | %s |\n", r.Tokens, r.Bytes, r.Chunks, r.Wall.Seconds(),
				float64(r.Wall.Milliseconds())/float64(r.Chunks), float64(r.WorkerPeakRSS)/(1<<20), r.Runs, r.MaxRunEvents, float64(r.MaxRunBytes)/1024,
				float64(r.S3Read)/float64(r.Bytes), r.Answer)
			fmt.Fprintf(os.Stderr, "scale %d done in %s\n", n, r.Wall.Round(time.Millisecond))
		}
		fmt.Fprintln(&report)
	}
	if want("review") {
		r, err := runReview(ctx, env)
		if err != nil {
			return fmt.Errorf("review: %w", err)
		}
		writeReview(&report, r)
	}
	if want("corpus") {
		r, err := runCorpus(ctx, env)
		if err != nil {
			return fmt.Errorf("corpus: %w", err)
		}
		writeCorpus(&report, r)
	}
	if want("batch") {
		r, err := runBatch(ctx, env, variants, alternate(len(variants), *batchRounds))
		if err != nil {
			return fmt.Errorf("batch: %w", err)
		}
		writeBatch(&report, r)
	}
	if want("convert") {
		r, err := runConvert(ctx, max(*convertRounds, 1))
		if err != nil {
			return fmt.Errorf("convert: %w", err)
		}
		writeConvert(&report, r)
	}
	if want("ocr") {
		r, err := runOCR(ctx, *ocrSource)
		if err != nil {
			return fmt.Errorf("ocr: %w", err)
		}
		writeOCR(&report, r)
	}
	fmt.Fprint(stdout, report.String())
	if *out != "" && *only == "" {
		return os.WriteFile(*out, []byte(report.String()), 0o644)
	}
	return nil
}

// tokenizerThroughput counts text in 64 KiB pieces with one tokenizer.
func tokenizerThroughput(name, text string) (int, time.Duration, error) {
	tok, err := tokenizer.New(name)
	if err != nil {
		return 0, 0, err
	}
	tok.Count("warm up")
	n := 0
	start := time.Now()
	for len(text) > 0 {
		end := min(len(text), 64<<10)
		for end < len(text) && !utf8.RuneStart(text[end]) {
			end++
		}
		n += len(tok.TokenLens(text[:end]))
		text = text[end:]
	}
	return n, time.Since(start), nil
}

func argsSuffix(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return " " + strings.Join(args, " ")
}

// newBenchEnv starts the embedded stack, or with ext.Address everything but
// Temporal, which is then the server at ext.Address.
func newBenchEnv(ctx context.Context, ext externalTemporal) (*benchEnv, error) {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	dev, err := devenv.Start(ctx, devenv.Options{FreePorts: true, DisableUI: true, Logger: logger,
		ExternalTemporal: ext.Address, Namespace: ext.Namespace})
	if err != nil {
		return nil, err
	}
	env := &benchEnv{dev: dev, logger: logger, server: embeddedServer}
	env.cfg = config.Default().AtDevStack(dev.Addresses())
	// The sections measured before the pool held calls back
	// (MEMAGENT_MODEL_PRIORITY_HOLD) stay comparable with their earlier
	// figures; the priority section sets it per row.
	env.cfg.ModelPriorityHold = "off"
	if env.store, err = pluginkit.NewStore(ctx, env.cfg.Options); err != nil {
		dev.Close()
		return nil, err
	}
	if env.temporal, err = workerapp.Dial(ctx, env.cfg, logger); err != nil {
		dev.Close()
		return nil, err
	}
	if env.tok, err = tokenizer.New(tokenizer.Qwen); err != nil {
		env.close()
		return nil, err
	}
	if ext.Address != "" {
		if env.server, err = externalServer(ctx, env.temporal.WorkflowService(), ext); err != nil {
			env.close()
			return nil, err
		}
	}
	return env, nil
}

// startWorker runs an in-process worker with cfg on the shared stack until
// the returned stop is called.
func (e *benchEnv) startWorker(ctx context.Context, cfg config.Config) (stop func(), err error) {
	run, err := workerapp.Start(ctx, cfg, workerapp.Options{Logger: e.logger})
	if err != nil {
		return nil, err
	}
	return run.Stop, nil
}

func (e *benchEnv) close() {
	if e.temporal != nil {
		e.temporal.Close()
	}
	e.dev.Close()
}
