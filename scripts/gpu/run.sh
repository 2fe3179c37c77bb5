#!/usr/bin/env bash
# The one GPU entry point: what a lent GPU machine runs, step by step (scripts/gpu/README.md).
#
#   bash scripts/gpu/run.sh STEP [ARG...]
#
# Steps:
#   env                     the machine and library versions only ($OUT/env.txt; every step writes it)
#   tests                   the test suite (gpu-marked tests included), the gpu tests alone (-v), then
#                           `linformer benchmark --quick` on CUDA; pytest-summary.json: counts, failures
#   table3 [PART...]        scripts/gpu/table3.py, one process per part (default: kernels compiled layer
#                           layer-batch8 encoder; also encoder-k256, layer-large-k)
#   throughput              scripts/gpu/train_throughput.py (masked-LM training tokens/s, `base` preset)
#   lra-data                the Long Range Arena files into $DATA/lra (docs/lra.md): ListOps generated (~3 min,
#                           640 MB), Text from $DATA/imdb; then DATA=$DATA/lra ... study recipes/lra/gpu.yaml
#   study RECIPE [OPT...]   `linformer reproduce RECIPE --data $DATA [OPT...]` until the time limit, then
#                           `--collect-only` (results of every run that finished)
#
# Environment:
#   OUT    where results go (required; the device tool sets it). A step writes under runs/gpu/STEP/
#          (git-ignored) and packs it into $OUT/STEP.tgz after every part and every PACK_EVERY seconds,
#          so a command cut at its time limit still brings back what finished.
#   DATA   the data folder a recipe's {data} stands for (default ../shared/data; on the GPU machine
#          the copy made by scripts/gpu/pack_data.sh and carried: DATA=.gpu/data)
#   LIMIT  seconds the whole step may take (default 540: under the device's 600-second command limit);
#          what still runs then gets SIGTERM (its whole process group), SIGKILL GRACE seconds later
#   COLLECT  seconds of LIMIT that `study` keeps for --collect-only (default 90)
#   GRACE, PACK_EVERY  (default 20, 60)
#
# Runs from the repository root wherever it is called from; kills only the processes it started.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1

usage() { sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; }

step=${1:-}
case "$step" in
  env | tests | table3 | throughput | lra-data | study) shift ;;
  -h | --help | help) usage; exit 0 ;;
  *) usage >&2; echo "run.sh: unknown or missing STEP: '${step}'" >&2; exit 2 ;;
esac
: "${OUT:?set OUT to the folder results go to (the device tool sets it)}"
DATA=${DATA:-../shared/data}
LIMIT=${LIMIT:-540}
COLLECT=${COLLECT:-90}
GRACE=${GRACE:-20}
PACK_EVERY=${PACK_EVERY:-60}
deadline=$((SECONDS + LIMIT))
WORK=runs/gpu/$step
mkdir -p "$OUT" "$WORK"

source scripts/gpu/setup.sh # carried wheels, PYTHONPATH, $OUT/env.txt
[[ $step == env ]] && exit 0
cp "$OUT/env.txt" "$WORK/env.txt"

PACK=()  # what pack() puts into $OUT/$step.tgz: files and folders, paths relative to the repository root
RUNS=""  # study: the recipe's output_dir, of which pack() takes the records of each run, never weights
pack() {
  local part="$OUT/$step.tgz.part" files
  files=$(
    for p in "${PACK[@]}"; do [[ -e $p ]] && find "$p" -type f ! -path '*/checkpoint-*'; done
    if [[ -n $RUNS && -d $RUNS ]]; then
      find "$RUNS" -maxdepth 1 -type f -name commands.sh
      find "$RUNS" -mindepth 2 -maxdepth 2 -type f -path "$RUNS/logs/*"
      find "$RUNS" -mindepth 3 -maxdepth 3 -type f \( -name metrics.json -o -name log_history.jsonl \
        -o -name eval_predictions.jsonl \)
    fi
  )
  [[ -n $files ]] || return 0
  # written whole, then renamed: $OUT never holds half an archive under the final name
  sort -u <<<"$files" | tar czf "$part" -T - && mv -f "$part" "$OUT/$step.tgz"
}

child=0
stop_group() { # stop_group PGID: SIGTERM to the process group this script started, SIGKILL after GRACE s
  local pgid=$1 until=$((SECONDS + GRACE))
  kill -0 -- "-$pgid" 2>/dev/null || return 0
  kill -TERM -- "-$pgid" 2>/dev/null
  while kill -0 -- "-$pgid" 2>/dev/null && ((SECONDS < until)); do sleep 1; done
  kill -KILL -- "-$pgid" 2>/dev/null
  return 0
}
on_signal() {
  ((child > 0)) && stop_group "$child"
  pack
  exit 143
}
trap on_signal TERM INT

limited() { # limited END LOG CMD...: CMD (stdout+stderr to LOG) in a process group of its own, until END
  local end=$1 log=$2 rc
  shift 2
  if ((SECONDS >= end)); then
    echo "run.sh: no time left for: $*" | tee -a "$log"
    return 124
  fi
  set -m # the job gets a process group of its own, whose id is its PID: stop_group ends it and its children
  "$@" >"$log" 2>&1 &
  child=$!
  set +m
  local next_pack=$((SECONDS + PACK_EVERY)) cut=0
  while kill -0 "$child" 2>/dev/null; do
    if ((SECONDS >= end)); then
      echo "run.sh: time limit reached, stopping: $*" | tee -a "$log"
      stop_group "$child"
      cut=1
      break
    fi
    if ((SECONDS >= next_pack)); then
      pack
      next_pack=$((SECONDS + PACK_EVERY))
    fi
    sleep 1
  done
  wait "$child"
  rc=$?
  stop_group "$child" # anything it left behind in its group (worker processes)
  child=0
  pack
  ((cut)) && return 124
  return "$rc"
}

case "$step" in
  tests)
    PACK=("$WORK")
    xdist=()
    python3 -c "import xdist" 2>/dev/null && xdist=(-n 8)
    limited "$deadline" "$WORK/pytest.log" python3 -m pytest -q -p no:cacheprovider "${xdist[@]}" -rs \
      --junitxml="$WORK/pytest.xml"
    tail -5 "$WORK/pytest.log"
    limited "$deadline" "$WORK/pytest-gpu.log" python3 -m pytest -q -p no:cacheprovider -m gpu -v \
      --junitxml="$WORK/pytest-gpu.xml"
    tail -6 "$WORK/pytest-gpu.log"
    python3 - "$WORK" "${xdist[*]}" <<'PY'
"""pytest-summary.json: counts, failed and skipped tests of the suite, the outcome of each gpu test."""
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

work, xdist = Path(sys.argv[1]), sys.argv[2]


def outcomes(name):
    path = work / f"{name}.xml"
    if not path.is_file():
        return None
    root = ET.parse(path).getroot()
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    cases = {}
    for case in suite.iter("testcase"):
        test = case.get("classname", "").replace(".", "/") + ".py::" + case.get("name", "")
        found = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        reason = next((child.get("message", "") for child in case if child.tag == "skipped"), None)
        cases[test] = ({"failure": "failed", "error": "error"}.get(found[0], "skipped") if found else "passed", reason)
    return float(suite.get("time", 0)), cases


summary = {}
suite = outcomes("pytest")
if suite:
    seconds, cases = suite
    count = {o: sum(1 for v, _ in cases.values() if v == o) for o in ("passed", "failed", "error", "skipped")}
    skipped = {}
    for outcome, reason in cases.values():
        if outcome == "skipped":
            skipped[reason] = skipped.get(reason, 0) + 1
    summary["suite"] = {
        "command": f"python3 -m pytest -q {xdist}".strip(), **count, "seconds": round(seconds, 1),
        "failed_tests": sorted(t for t, (o, _) in cases.items() if o in ("failed", "error")),
        "skip_reasons": skipped,
    }
gpu = outcomes("pytest-gpu")
if gpu:
    summary["gpu_tests"] = {"command": "python3 -m pytest -m gpu", **{t: o for t, (o, _) in sorted(gpu[1].items())}}
(work / "pytest-summary.json").write_text(json.dumps(summary, indent=1) + "\n")
print(json.dumps(summary, indent=1))
PY
    pack
    limited "$deadline" "$WORK/bench-quick.log" python3 -m linformer_kit.cli.main benchmark --quick \
      --device cuda --dtype bfloat16 --no-progress --output-dir "$WORK/bench-quick"
    tail -30 "$WORK/bench-quick.log"
    ;;
  table3)
    PACK=("$WORK")
    parts=("$@")
    ((${#parts[@]})) || parts=(kernels compiled layer layer-batch8 encoder)
    for part in "${parts[@]}"; do
      limited "$deadline" "$WORK/log-$part.txt" python3 scripts/gpu/table3.py --out "$WORK" --parts "$part"
      echo "table3 $part: exit $?"
      tail -3 "$WORK/log-$part.txt"
    done
    ;;
  throughput)
    PACK=("$WORK")
    limited "$deadline" "$WORK/log.txt" python3 scripts/gpu/train_throughput.py --out "$WORK"
    echo "throughput: exit $?"
    tail -16 "$WORK/log.txt"
    ;;
  lra-data)
    PACK=("$WORK")
    lra="$DATA/lra"
    for task in listops text; do # a task whose files are there already is not made again
      if [[ -f $lra/$task/label_balance.json ]]; then echo "lra-data: $lra/$task is there"; continue; fi
      from=()
      [[ $task == text ]] && from=(--imdb "$DATA/imdb")
      limited "$deadline" "$WORK/$task.log" python3 -m linformer_kit.cli.main lra prepare "$task" "${from[@]}" \
        --output-dir "$lra/$task"
      echo "lra-data $task: exit $?"
      tail -3 "$WORK/$task.log"
      cp "$lra/$task/label_balance.json" "$WORK/$task-label_balance.json" 2>/dev/null
    done
    pack
    ;;
  study)
    recipe=${1:?study needs a recipe: run.sh study recipes/reproduction/gpu-learns.yaml}
    shift
    options=("$@")
    # where the driver writes: the recipe's output_dir / results_dir, or what the options override
    read -r out_dir results_dir < <(python3 -c 'import sys, yaml; r = yaml.safe_load(open(sys.argv[1]))
print(r["output_dir"], r["results_dir"])' "$recipe") || exit 2
    for ((i = 0; i < ${#options[@]}; i++)); do
      case "${options[i]}" in
        --output-dir) out_dir=${options[i + 1]:-$out_dir} ;;
        --results-dir) results_dir=${options[i + 1]:-$results_dir} ;;
      esac
    done
    if grep -q '{data}' "$recipe" && [[ ! -d $DATA ]]; then
      echo "run.sh: the recipe reads {data}, and DATA=$DATA is no folder (on the GPU machine: carry .gpu," \
        "made by scripts/gpu/pack_data.sh, and set DATA=.gpu/data)" >&2
      exit 2
    fi
    PACK=("$results_dir" "$WORK")
    RUNS=$out_dir
    export OMP_NUM_THREADS=${OMP_NUM_THREADS:-4} # several runs side by side on 16 cores
    reproduce=(python3 -m linformer_kit.cli.main reproduce "$recipe" --data "$DATA")
    limited $((deadline - COLLECT)) "$WORK/study.log" "${reproduce[@]}" "${options[@]}"
    echo "study: exit $?"
    grep -E '^\[reproduce\] (done|FAILED)' "$WORK/study.log"
    limited "$deadline" "$WORK/collect.log" "${reproduce[@]}" "${options[@]}" --collect-only
    echo "collect: exit $?"
    tail -3 "$WORK/collect.log"
    [[ -f $results_dir/results.md ]] && head -12 "$results_dir/results.md"
    ;;
esac
pack
echo "run.sh $step: results in $OUT/$step.tgz (unpack at the repository root)"
