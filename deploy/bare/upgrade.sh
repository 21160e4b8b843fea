# deploy/bare/run.sh --upgrade, sourced by run.sh once PostgreSQL, Temporal,
# S3, the simulator and the setup job are up: docs/DEPLOY.md's "Upgrading"
# on these processes, each operator step a `temporal` CLI command printed
# with what it answered. It uses run.sh's functions and variables (start,
# wait_for, svc_env, svc_var, ports, work, cache, temporal_cli, pids).

ns=$(svc_var setup TEMPORAL_NAMESPACE)
tq=$(svc_var worker MEMAGENT_TASK_QUEUE)
tq=${tq:-memagent}
dep=memagent

# tcli: the temporal CLI at this server (HOME is the run's directory, so
# no profile of this user's is read).
tcli() {
  env -i PATH="$PATH" HOME="$work" TEMPORAL_ADDRESS="127.0.0.1:${ports[temporal]}" TEMPORAL_NAMESPACE="$ns" \
    "$temporal_cli" "$@"
}
# show ARGS...: prints the command and what it answered, indented.
show() {
  local a line='  $ temporal'
  for a in "$@"; do
    [[ $a == *[[:space:]]* ]] && a="\"$a\""
    line+=" $a"
  done
  echo "$line"
  local out code=0
  out=$(tcli "$@" 2>&1) || code=$?
  printf '%s\n' "${out:-(nothing)}" | sed 's/^/    /'
  return "$code"
}
say() { printf '\nupgrade: %s\n' "$*"; }
fail() { echo "bare --upgrade: $*; logs in $work (MEMAGENT_BARE_KEEP=1 keeps them)" >&2; exit 1; }

mapfile -t starter_env < <(svc_env starter)
starter() { env -i PATH="$PATH" HOME="$HOME" "${starter_env[@]}" "$cache/bin/starter" "$@"; }
gendoc() { "$cache/bin/devstack" gen-doc "$@"; }

# build_of ID [RUN]: the build a run of workflow ID is (or was) on.
build_of() {
  tcli workflow describe -w "$1" ${2:+-r "$2"} -o json 2>/dev/null |
    jq -r '.workflowExecutionInfo.versioningInfo.deploymentVersion.buildId // "none"'
}
# builds_of ID: the build of each run of workflow ID, oldest first.
builds_of() {
  local run out=()
  for run in $(tcli workflow list --query "WorkflowId = '$1'" -o json | jq -r 'sort_by(.startTime)[] | .execution.runId'); do
    out+=("$(build_of "$1" "$run")")
  done
  local IFS=' '
  echo "${out[*]}"
}

# chunks_read ID N: whether the run of ID has read N chunks (its progress
# query, answered by its build's workers).
chunks_read() {
  [ "$(tcli workflow query -w "$1" --type progress -o json 2>/dev/null | jq -r '.queryResult[0].chunks_done // 0')" -ge "$2" ]
}
# running_question: whether a DocumentQA runs, its id then in long.id.
running_question() {
  tcli workflow list --query "WorkflowType = 'memagent.DocumentQA' AND ExecutionStatus = 'Running'" -o json |
    jq -er '.[0].execution.workflowId' >"$work/long.id"
}
# on_build ID B: whether the latest run of ID is on build B.
on_build() { [ "$(build_of "$1")" = "$2" ]; }
# drained B: whether Temporal says build B has drained.
drained() {
  tcli worker deployment describe-version --deployment-name "$dep" --build-id "$1" -o json |
    jq -e '.drainageInfo.drainageStatus | test("drained"; "i")' >/dev/null
}

declare -A worker_pid
# start_build B PORT: worker-B (a binary stamped with version bare-B) as a
# version of Worker Deployment memagent, its HTTP endpoint on PORT.
start_build() {
  env_over=("TEMPORAL_DEPLOYMENT_NAME=$dep" "MEMAGENT_HTTP_ADDR=127.0.0.1:$2")
  start "worker-$1" worker "$cache/bin/worker-$1"
  env_over=()
  worker_pid[$1]=${pids[-1]}
  wait_for "worker bare-$1" 120 curl -fsS "http://127.0.0.1:$2/readyz"
  wait_for "bare-$1 in Worker Deployment $dep" 60 tcli worker deployment describe-version --deployment-name "$dep" --build-id "bare-$1"
}

say "1. Build bare-v1 starts: worker --version says $("$cache/bin/worker-v1" --version), the build id it polls as (TEMPORAL_DEPLOYMENT_NAME=$dep)"
start_build v1 "${ports[worker]}"
show worker deployment describe --name "$dep"
say "   and is made current: new runs start on it"
show worker deployment set-current-version --deployment-name "$dep" --build-id bare-v1 --yes ||
  fail "set-current-version bare-v1 failed"
show worker deployment describe --name "$dep"

say "2. bare-v1 starts a long question (180 chunks, 300 ms a model call) and a batch of 4 (60 chunks each)"
gendoc --tokens 90000 --seed 1 --out "$work/long.txt" >"$work/long.gen"
question=$(sed -n 's/^question: //p' "$work/long.gen")
answer=$(sed -n 's/^answer: *//p' "$work/long.gen")
starter ask --doc "$work/long.txt" --question "$question" --answer "$answer" --chunk-tokens 500 --reuse none \
  --output json >"$work/long.json" 2>"$work/long.log" &
ask_pid=$!
wait_for "the long question's start" 120 running_question
qa_id=$(cat "$work/long.id")
for i in 1 2 3 4; do
  gendoc --tokens 30000 --seed $((10 + i)) --out "$work/item$i.txt" >/dev/null
  jq -cn --arg d "$work/item$i.txt" --arg q "$question" --arg a "$answer" --arg id "i$i" \
    '{id: $id, document: $d, question: $q, answers: [$a]}'
done >"$work/manifest.jsonl"
batch_id=$(starter batch --manifest "$work/manifest.jsonl" --chunk-tokens 500 --concurrency 2 --reuse none --no-wait --json | jq -r '.workflow_id')
[ -n "$batch_id" ] && [ "$batch_id" != null ] || fail "the batch did not start"
wait_for "the long question reading" 120 chunks_read "$qa_id" 5
echo "  question $qa_id on $(build_of "$qa_id"), batch $batch_id on $(build_of "$batch_id")"

say "3. Build bare-v2 starts beside it: it polls, and takes nothing yet"
start_build v2 "${ports[worker2]}"
show worker deployment describe-version --deployment-name "$dep" --build-id bare-v2

say "4. Ramp: 50% of new runs (by a hash of their workflow id) start on bare-v2"
show worker deployment set-ramping-version --deployment-name "$dep" --build-id bare-v2 --percentage 50 --yes ||
  fail "set-ramping-version failed"
doc_uri=$(starter estimate --doc "$work/item1.txt" --question "$question" --chunk-tokens 500 --json | jq -r '.document')
ramp_runs=20
for i in $(seq -w 1 "$ramp_runs"); do
  tcli workflow start --task-queue "$tq" --type memagent.Estimate --workflow-id "upgrade-ramp-$i" \
    --input "$(jq -cn --arg d "$doc_uri" --arg q "$question" '{document: $d, questions: [$q]}')" >/dev/null
done
on_v2=0
for i in $(seq -w 1 "$ramp_runs"); do
  tcli workflow result -w "upgrade-ramp-$i" >/dev/null 2>&1 || fail "ramp run upgrade-ramp-$i failed"
  [ "$(build_of "upgrade-ramp-$i")" = bare-v2 ] && on_v2=$((on_v2 + 1))
done
echo "  $on_v2 of $ramp_runs new runs started on bare-v2, the rest on bare-v1"
[ "$on_v2" -ge $((ramp_runs / 4)) ] && [ "$on_v2" -le $((3 * ramp_runs / 4)) ] || fail "$on_v2 of $ramp_runs runs on bare-v2 at a 50% ramp"
echo "  question $qa_id on $(build_of "$qa_id") (runs whose id the ramp picks move at their next boundary)"

say "5. bare-v2 made current: every new run starts on it, every run in flight moves at its next boundary"
show worker deployment set-current-version --deployment-name "$dep" --build-id bare-v2 --yes ||
  fail "set-current-version bare-v2 failed"
show worker deployment describe --name "$dep"
wait_for "the long question on bare-v2" 120 on_build "$qa_id" bare-v2
show workflow describe -w "$qa_id" | sed -n '1p;/Versioning Info:/,/BuildId/p'

say "6. A new run starts on bare-v2"
starter ask --doc "$work/item1.txt" --question "$question" --chunk-tokens 500 --reuse none --output json >"$work/new.json" 2>"$work/new.log" ||
  fail "a new question failed"
new_id=$(jq -r .workflow_id "$work/new.json")
echo "  $new_id ran on $(builds_of "$new_id"), answered: $(jq -r .answer "$work/new.json")"

say "7. The runs bare-v1 started end on bare-v2, each run on one build"
wait "$ask_pid" || fail "the long question failed: $(tail -n 5 "$work/long.log")"
got=$(jq -r .answer "$work/long.json")
echo "  $qa_id: runs on $(builds_of "$qa_id"); answered: $got (planted: $answer)"
[[ ${got,,} == *"${answer,,}"* ]] || fail "the long question's answer does not contain the planted fact"
tcli workflow result -w "$batch_id" >/dev/null || fail "the batch failed"
echo "  $batch_id: runs on $(builds_of "$batch_id"); $(tcli workflow result -w "$batch_id" -o json | jq -r '.result | "\(.succeeded) of \(.items) items answered"')"
for i in 0 1 2 3; do
  echo "    child $batch_id/$i: runs on $(builds_of "$batch_id/$i")"
done

say "8. Drain check: no run is left on bare-v1"
show workflow list --query "TemporalWorkerDeploymentVersion = '$dep:bare-v1' AND ExecutionStatus = 'Running'"
wait_for "bare-v1 drained" 120 drained bare-v1
show worker deployment describe-version --deployment-name "$dep" --build-id bare-v1

say "9. bare-v1 is stopped"
kill -TERM "${worker_pid[v1]}"
wait "${worker_pid[v1]}" || true
echo "  worker bare-v1 exited"

say "10. Retirement: Temporal forgets bare-v1 once it has seen no poller of it for 5 minutes (matching.PollerHistoryTTL); not waited for here"
show worker deployment delete-version --deployment-name "$dep" --build-id bare-v1 ||
  echo "  (refused while the server still remembers bare-v1's pollers: run it again after 5 minutes)"

say "done: every step as docs/DEPLOY.md's \"Upgrading\" says, $((SECONDS - began))s after PostgreSQL started"
