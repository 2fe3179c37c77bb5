#!/bin/bash
# The recommended student and a training step at one older commit and at this checkout, side by side on one
# machine (docs/benchmarks/ab-5a34af5/README.md, "The student at 5a34af5 and now"): each commit converts its own student from
# all-MiniLM-L6-v2 and runs `benchmark --preset student` and `--preset training --seq-lens 2048`, in the order
# old, new, old, new. Run from the repository root on a quiet machine, with the older commit checked out apart:
#     git worktree add --detach ../ab-old 5a34af5
#     scripts/cpu/commits_ab.sh ../ab-old runs/ab
set -eu
OLD=$(cd "$1" && pwd); OUT=$2; NEW=$(pwd)
M=runs/models/all-MiniLM-L6-v2
S="--projected-length 128 --sharing headwise --local-window 64 --global-tokens 1 --exact-length 512 --max-length 4096"
kit() { PYTHONPATH=$1/src python -c "import sys; from linformer_kit.cli.main import main; sys.argv[0] = 'linformer'; sys.exit(main())" "${@:2}"; }
mkdir -p "$OUT"
[ -d "$OUT/student-old" ] || kit "$OLD" convert $M "$OUT/student-old" $S
[ -d "$OUT/student-new" ] || kit "$NEW" convert $M "$OUT/student-new" $S
for r in 1 2; do
  for side in old new; do
    root=$NEW; [ $side = old ] && root=$OLD
    echo "$(date +%T) $side, round $r"
    rm -rf "$OUT/$side-$r" "$OUT/train-$side-$r"
    kit "$root" benchmark --preset student --original $M --student "$side=$OUT/student-$side" --runtimes torch \
      --measure-memory false --seq-lens 128 512 4096 --threads 2 --output-dir "$OUT/$side-$r" > "$OUT/$side-$r.log" 2>&1
    kit "$root" benchmark --preset training --seq-lens 2048 --output-dir "$OUT/train-$side-$r" > "$OUT/train-$side-$r.log" 2>&1
  done
done
