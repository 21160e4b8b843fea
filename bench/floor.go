package main

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"github.com/sashabaranov/go-openai"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/internal/assemble"
	"github.com/memagent/memagent/internal/dev/simulator"
	"github.com/memagent/memagent/internal/pluginkit"
	"github.com/memagent/memagent/worker/config"
	"github.com/memagent/memagent/worker/workerapp"
)

// The floor of orchestration: a workflow that runs trivial activities one
// after another, the least a durable loop over chunks can cost on a given
// Temporal server and worker. Registered only by the bench's own worker.
const (
	floorWorkflowName = "bench.FloorLoop"
	floorActivityName = "bench.Nothing"
	// floorModelActivityName is the cost section's second baseline: one
	// plain OpenAI-compatible chat call, no memagent logic.
	floorModelActivityName = "bench.ModelCall"
)

// floorInput is the floor workflow's input.
type floorInput struct {
	// Activities is how many trivial activities to run, one at a time.
	Activities int `json:"activities"`
	// SleepMS is how long each activity waits before it returns (the cost
	// section's stand-in for a model call); 0 returns at once.
	SleepMS int `json:"sleep_ms,omitempty"`
	// ModelCall runs the bare model call (floorModelActivityName) instead
	// of the trivial activity.
	ModelCall bool `json:"model_call,omitempty"`
}

// floorActivityInput is the trivial activity's input.
type floorActivityInput struct {
	Index   int `json:"index"`
	SleepMS int `json:"sleep_ms,omitempty"`
}

// floorLoop runs in.Activities trivial activities in sequence.
func floorLoop(ctx workflow.Context, in floorInput) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	name := floorActivityName
	if in.ModelCall {
		name = floorModelActivityName
	}
	for i := range in.Activities {
		if err := workflow.ExecuteActivity(ctx, name, floorActivityInput{Index: i, SleepMS: in.SleepMS}).Get(ctx, nil); err != nil {
			return fmt.Errorf("activity %d: %w", i, err)
		}
	}
	return nil
}

// nothing is the trivial activity: it returns at once, or after
// in.SleepMS.
func nothing(ctx context.Context, in floorActivityInput) error {
	if in.SleepMS <= 0 {
		return nil
	}
	t := time.NewTimer(time.Duration(in.SleepMS) * time.Millisecond)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// startFloorWorker starts a worker the way workerapp.Start does (the same
// client with its interceptors and data converter, the same worker options
// from workerapp.NewWorker, memagent's workflows and activities), with the
// floor workflow and activity registered beside memagent's, so that both
// run on one worker with one configuration.
func startFloorWorker(ctx context.Context, env *benchEnv, cfg config.Config) (stop func(), err error) {
	return startFloorWorkerWith(ctx, env.logger, cfg)
}

func startFloorWorkerWith(ctx context.Context, logger *slog.Logger, cfg config.Config) (stop func(), err error) {
	var mc *bareModelCall
	if path := os.Getenv(floorModelPromptEnv); path != "" {
		if mc, err = newBareModelCall(path, cfg); err != nil {
			return nil, err
		}
	}
	opts := workerapp.Options{Logger: logger}
	acts, pool, err := pluginkit.NewActivities[*activities.Activities](ctx, workerapp.PluginOptions(cfg, opts))
	if err != nil {
		return nil, err
	}
	pool.Start(ctx)
	c, err := workerapp.Dial(ctx, cfg, logger)
	if err != nil {
		pool.Close()
		return nil, err
	}
	if err := assemble.CheckSearchAttributes(ctx, c, cfg.TemporalNamespace, logger); err != nil {
		c.Close()
		pool.Close()
		return nil, err
	}
	w := workerapp.NewWorker(c, cfg, acts, pool.Capacity(), opts)
	w.RegisterWorkflowWithOptions(floorLoop, workflow.RegisterOptions{Name: floorWorkflowName})
	w.RegisterActivityWithOptions(nothing, activity.RegisterOptions{Name: floorActivityName})
	if mc != nil {
		w.RegisterActivityWithOptions(mc.call, activity.RegisterOptions{Name: floorModelActivityName})
	}
	if err := w.Start(); err != nil {
		c.Close()
		pool.Close()
		return nil, fmt.Errorf("start worker: %w", err)
	}
	return func() {
		w.Stop()
		c.Close()
		pool.Close()
		acts.Close()
	}, nil
}

// runFloor runs the floor workflow with n activities on queue and returns
// its wall time, from start to result.
func runFloor(ctx context.Context, env *benchEnv, queue string, n int) (time.Duration, error) {
	start := time.Now()
	run, err := env.temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: queue}, floorWorkflowName, floorInput{Activities: n})
	if err != nil {
		return 0, err
	}
	if err := run.Get(ctx, nil); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// workerProcess is a bench worker running in a process of its own.
type workerProcess struct {
	cmd *exec.Cmd
	// profileAtSignal: the worker starts its CPU profile at SIGUSR1
	// (workerProfileAtSignalEnv), which would end any other worker.
	profileAtSignal bool
}

// startWorkerProcess starts the bench binary as a plain worker (see
// runWorkerProcess) on queue, against the shared stack and the model at
// modelURL, and waits until it polls.
func startWorkerProcess(ctx context.Context, env *benchEnv, queue, modelURL string, extraEnv ...string) (*workerProcess, error) {
	cmd := exec.CommandContext(ctx, os.Args[0])
	cmd.Env = append(os.Environ(), workerProcessEnv+"=1",
		"TEMPORAL_ADDRESS="+env.cfg.TemporalAddress, "TEMPORAL_NAMESPACE="+env.cfg.TemporalNamespace,
		"AWS_ENDPOINT_URL_S3="+string(env.cfg.S3Endpoint), "AWS_ACCESS_KEY_ID="+env.cfg.S3AccessKeyID,
		"AWS_SECRET_ACCESS_KEY="+env.cfg.S3SecretAccessKey, "AWS_REGION="+env.cfg.S3Region,
		"MEMAGENT_BUCKET="+env.cfg.Bucket, "OPENAI_BASE_URL="+modelURL, "MEMAGENT_TASK_QUEUE="+queue,
		"MEMAGENT_LOG_LEVEL=error")
	cmd.Env = append(cmd.Env, extraEnv...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &workerProcess{cmd: cmd, profileAtSignal: slices.Contains(extraEnv, workerProfileAtSignalEnv+"=1")}
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || !strings.Contains(line, "worker ready") {
		p.stop()
		return nil, fmt.Errorf("worker process did not start: %q %v", line, err)
	}
	return p, nil
}

// startProfile tells the worker process to start its CPU profile, when it
// writes one from SIGUSR1 on (workerProfileAtSignalEnv); else it does
// nothing.
func (p *workerProcess) startProfile() {
	if p.profileAtSignal {
		_ = p.cmd.Process.Signal(syscall.SIGUSR1)
	}
}

// stop ends the worker process and waits for it.
func (p *workerProcess) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	_ = p.cmd.Wait()
}

// clockTicks is the unit of the CPU times in /proc/PID/stat: USER_HZ,
// which Linux fixes at 100 for user space whatever the kernel's HZ.
const clockTicks = 100

// cpuTime is the user plus system CPU a process has used so far, all its
// threads together, from /proc/PID/stat (10 ms resolution).
func (p *workerProcess) cpuTime() (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	// The command name, field 2, is in parentheses and may hold spaces:
	// count fields from the last ')'. utime and stime are fields 14 and
	// 15, so the 12th and 13th after it.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", p.cmd.Process.Pid)
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the command name, want at least 13", p.cmd.Process.Pid, len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", p.cmd.Process.Pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// floorModelPromptEnv names a file holding the prompt the bare model call
// sends; set, the floor worker registers floorModelActivityName.
const floorModelPromptEnv = "MEMAGENT_BENCH_MODEL_PROMPT"

// bareModelCall is the cost section's second baseline: the model call a
// chunk update makes, without memagent. It sends one fixed prompt (read
// once at start, the size of a chunk update's) to the first model URL
// with a plain go-openai client and memagent's sampling options, and
// returns the completion's length: no template, tokenizer, S3, heartbeat
// or trace.
type bareModelCall struct {
	client *openai.Client
	model  string
	prompt string
}

func newBareModelCall(path string, cfg config.Config) (*bareModelCall, error) {
	prompt, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("bare model call: %w", err)
	}
	if len(cfg.ModelURLs) == 0 {
		return nil, fmt.Errorf("bare model call: no model URL (set OPENAI_BASE_URL)")
	}
	oc := openai.DefaultConfig(cfg.ModelAPIKey)
	oc.BaseURL = cfg.ModelURLs[0]
	model := cfg.Model
	if model == "" {
		model = simulator.DefaultModel
	}
	return &bareModelCall{client: openai.NewClientWithConfig(oc), model: model, prompt: string(prompt)}, nil
}

// call makes the chat call and returns the completion's length in bytes.
func (m *bareModelCall) call(ctx context.Context, _ floorActivityInput) (int, error) {
	resp, err := m.client.CreateChatCompletion(ctx, openai.ChatCompletionRequest{
		Model:       m.model,
		Messages:    []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: m.prompt}},
		Temperature: 0.7, TopP: 0.95, MaxTokens: 1024,
	})
	if err != nil {
		return 0, err
	}
	if len(resp.Choices) == 0 {
		return 0, fmt.Errorf("bare model call: no choices")
	}
	return len(resp.Choices[0].Message.Content), nil
}
