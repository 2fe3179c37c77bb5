"""Issue "On a GPU", step 1: the README's long student at GPU scale, its learning curve, scored by `longdocs`.

    source scripts/gpu/setup.sh; python3 scripts/gpu/long_student.py MODE [--limit S] [--steps N ...]

MODE `smoke` (a call that also carries the teacher): the teacher kept in /tmp/keep for the next call on the
warm machine, then a short distill on the carried smoke text at the real long shape (4 096 tokens, batch 16)
whose seconds a step size the full run, and one small `longdocs` whose seconds size the scoring.
MODE `full`: the README's long command (its 512 stage, then its long stage) at `--steps` long steps, batch
16, bf16 autocast, one process a variant side by side (a small model leaves the GPU mostly idle), checkpoints
every `--save-every` steps; each checkpoint of `--score-at` scored by `longdocs` (books, IMDB, passkey,
access code, needle at 1 024 and 4 096, seeds 1-3) against the original's truncation and chunks, while the
training runs. At `--limit` seconds what still runs gets SIGTERM (a Trainer saves where it is).

Carried (git-ignored, `carry`): .whl/ (datasets), .gpu/model/all-MiniLM-L6-v2 (bf16: 44 MiB; upcast to fp32
here, so every model reads the bf16-rounded original's weights, the baselines too), .gpu/smoke or
.gpu/long (text as .jsonl.xz, `dir_name.jsonl.xz` -> dir/name.jsonl.gz; .gz files as they are: made by
scripts/gpu/pack_long.py). Results: runs/gpu/long/ packed into $OUT/long.tgz every 30 s (logs, metrics,
trainer_state.json, longdocs records; never weights), and the first variant's final long layers as bf16
shards $OUT/long_layers-*.safetensors (at most 16 MiB each).
"""

from __future__ import annotations

import argparse
import gzip
import lzma
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

KEEP = Path("/tmp/keep")  # outlives a call on the warm machine
WORK = Path("runs/gpu/long")
TEACHER = KEEP / "teacher"
DATA = KEEP / "data"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt")
# the README's long command, less its data paths and step counts
README = ["--projected-length", "128", "--local-window", "64", "--global-tokens", "1"]
CLI = [sys.executable, "-m", "linformer_kit.cli.main"]  # the project is on PYTHONPATH there, not installed
VARIANTS = {  # name -> options beside the README's (issue "Long documents on prose", item 3: by measurement)
    "readme": [],
    "window4": ["--window-weight", "4"],
    "crops": ["--crop-weight", "1"],
}
EVAL = ["--tasks", "books", "imdb", "passkey", "access-code", "needle", "--tokens-per-batch", "65536"]
START = time.time()


def log(message: str) -> None:
    print(f"[{time.time() - START:6.1f} s] {message}", flush=True)


def keep_teacher() -> None:
    """The carried bf16 teacher, upcast to fp32, into /tmp/keep (or the one an earlier call kept)."""
    carried = Path(".gpu/model/all-MiniLM-L6-v2")
    if not carried.is_dir():
        if not (TEACHER / "model.safetensors").is_file():
            sys.exit("no teacher: carry .gpu/model, or run on the machine a smoke call kept it on")
        log(f"teacher: kept by an earlier call ({TEACHER})")
        return
    from safetensors.torch import load_file, save_file

    if TEACHER.exists():
        shutil.rmtree(TEACHER)
    shutil.copytree(carried, TEACHER)
    weights = load_file(carried / "model.safetensors")
    fp32 = {k: (v.float() if v.is_floating_point() else v).contiguous() for k, v in weights.items()}
    save_file(fp32, TEACHER / "model.safetensors", metadata={"format": "pt"})
    log(f"teacher: upcast to fp32 into {TEACHER}")


def unpack_text(source: Path) -> None:
    """`dir_name.jsonl.xz` -> DATA/dir/name.jsonl.gz (gzip level 1), `dir/x.gz` copied as it is."""
    for path in sorted(source.rglob("*")):
        if path.name.endswith(".jsonl.xz"):
            folder, name = path.name[: -len(".jsonl.xz")].split("_", 1)
            target = DATA / folder / f"{name}.jsonl.gz"
            target.parent.mkdir(parents=True, exist_ok=True)
            with lzma.open(path, "rb") as src, gzip.open(target, "wb", compresslevel=1) as dst:
                shutil.copyfileobj(src, dst, 1 << 24)
        elif path.is_file():
            target = DATA / path.relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, target)
    log(f"data: {sorted(str(p.relative_to(DATA)) for p in DATA.rglob('*.*'))}")


def start(name: str, argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen:
    WORK.mkdir(parents=True, exist_ok=True)
    out = open(WORK / f"{name}.log", "w")  # noqa: SIM115 (open while the process runs)
    out.write(" ".join(argv) + "\n")
    out.flush()
    log(f"start {name}")
    return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                            env={**os.environ, **(env or {})})  # fmt: skip


def distill_argv(name: str, args: argparse.Namespace, extra: list[str]) -> list[str]:
    d = DATA
    argv = [*CLI, "distill", "--teacher", str(TEACHER), "--train", f"{d}/imdb/train.jsonl.gz",
            "--validation", f"{d}/imdb/test.jsonl.gz", "--max-train-documents", str(args.train_documents),
            "--output-dir", str(WORK / name), *README, "--end-to-end-steps", str(args.e2e_steps),
            "--long-length", str(args.long_length),
            "--long-train", f"{d}/gutenberg/train.jsonl.gz", f"{d}/imdb/unsup.jsonl.gz",
            "--long-steps", str(args.steps), "--long-batch-size", str(args.batch), "--bf16",
            "--save-steps", str(args.save_every), "--logging-steps", str(args.log_every),
            "--dataloader-num-workers", "2", "--seed", "42"]  # fmt: skip
    if (WORK / name).is_dir():  # a second call on the same warm machine continues what the first left
        argv.append("--resume")
    return argv + extra


def stop(process: subprocess.Popen, grace: float = 25) -> None:
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)


def eval_folder(checkpoint: Path) -> Path:
    """A checkpoint as a model folder `longdocs` reads: its weights and config, the teacher's tokenizer."""
    folder = checkpoint.parent.parent / f"eval-{checkpoint.name}"
    folder.mkdir(exist_ok=True)
    for name in ("model.safetensors", "config.json"):
        target = folder / name
        if not target.exists():
            target.symlink_to((checkpoint / name).resolve())
    for name in TOKENIZER_FILES:
        if (TEACHER / name).is_file():
            shutil.copy(TEACHER / name, folder / name)
    return folder


def score(model: Path, label: str, args: argparse.Namespace, small: bool = False) -> subprocess.Popen:
    extra = ["--seeds", "1", "--pairs", "20", "--candidates", "20", "--queries", "10", "--probe-train", "40",
             "--probe-subset", "20", "--probe-test", "40"] if small else ["--seeds", "1", "2", "3"]  # fmt: skip
    out = WORK / "scores" / label
    shutil.rmtree(out, ignore_errors=True)
    argv = [*CLI, "longdocs", str(model), "--original", str(TEACHER), "--data", str(DATA), "--output-dir",
            str(out), *EVAL, "--lengths", "1024", str(args.long_length), "--device", args.device, *extra]  # fmt: skip
    return start(f"score-{label}", argv)


def pack(out: Path) -> None:
    """Every record under WORK (no weights, no checkpoint but its trainer_state.json) into out/long.tgz."""
    part = out / "long.tgz.part"
    with tarfile.open(part, "w:gz") as tar:
        for path in sorted(WORK.rglob("*")):
            if (
                not path.is_file()
                or path.is_symlink()
                or path.suffix in (".safetensors", ".pt", ".bin", ".pth")
            ):
                continue
            if "checkpoint-" in str(path) and path.name != "trainer_state.json":
                continue
            if path.stat().st_size > 4 << 20:
                continue
            tar.add(path)
    part.rename(out / "long.tgz")


def long_layer_shards(folder: Path, out: Path) -> None:
    """The long layers of `folder`'s model.safetensors as bf16 shards of at most 15 MiB in `out`."""
    import torch
    from safetensors.torch import load_file, save_file

    weights = load_file(folder / "model.safetensors")
    wanted = {k: v.to(torch.bfloat16).contiguous() for k, v in weights.items()
              if ".long_layer." in k or "projection" in k}  # fmt: skip
    shard, size, index = {}, 0, 0
    for key in sorted(wanted):
        value = wanted[key]
        if shard and size + value.numel() * 2 > 15 << 20:
            save_file(shard, out / f"long_layers-{index}.safetensors")
            shard, size, index = {}, 0, index + 1
        shard[key], size = value, size + value.numel() * 2
    if shard:
        save_file(shard, out / f"long_layers-{index}.safetensors")
    log(f"long layers: {len(wanted)} tensors in {index + 1} shard(s)")


def checkpoints(run: Path) -> dict[int, Path]:
    long = run / "long"
    done = {}
    for path in long.glob("checkpoint-*") if long.is_dir() else []:
        if (path / "trainer_state.json").is_file() and (path / "model.safetensors").is_file():
            done[int(path.name.split("-")[1])] = path
    return done


def smoke(args: argparse.Namespace, out: Path) -> None:
    keep_teacher()
    unpack_text(Path(args.text or ".gpu/smoke"))
    run = start("smoke", distill_argv("smoke", args, []))
    while run.poll() is None and time.time() - START < args.limit - 60:
        time.sleep(5)
        pack(out)
    stop(run)
    log(f"smoke distill exit {run.returncode}")
    done = checkpoints(WORK / "smoke")
    if done:
        scorer = score(eval_folder(done[max(done)]), "smoke", args, small=True)
        while scorer.poll() is None and time.time() - START < args.limit - 10:
            time.sleep(5)
        stop(scorer)
        log(f"smoke longdocs exit {scorer.returncode}")
    pack(out)


def full(args: argparse.Namespace, out: Path) -> None:
    keep_teacher()
    unpack_text(Path(args.text or ".gpu/long"))
    names = args.variants
    first = names[0]
    runs = {first: start(first, distill_argv(first, args, VARIANTS[first]))}
    scored: set[tuple[str, int]] = set()
    scorers: list[subprocess.Popen] = []
    last_pack = 0.0
    while time.time() - START < args.limit:
        for name in names[1:]:  # the others take the first's 512 stage once it finished
            if name not in runs and (WORK / first / "end-to-end" / "stage.json").is_file():
                extra = ["--stages-from", str(WORK / first), *VARIANTS[name]]
                runs[name] = start(name, distill_argv(name, args, extra))
        for name in runs:
            wanted = {*args.score_at, args.steps} if name == first else {args.steps}
            for step, path in sorted(checkpoints(WORK / name).items()):
                if step in wanted and (name, step) not in scored:
                    scored.add((name, step))
                    done = WORK / "scores" / f"{name}-{step}" / "longdocs.json"  # a first call's, kept
                    if not done.is_file():
                        scorers.append(score(eval_folder(path), f"{name}-{step}", args))
        if time.time() - last_pack > 30:
            pack(out)
            last_pack = time.time()
        if all(p.poll() is not None for p in [*runs.values(), *scorers]) and len(runs) == len(names):
            break
        time.sleep(5)
    for process in [*runs.values(), *scorers]:
        stop(process)
    log("exits: " + ", ".join(f"{n} {p.returncode}" for n, p in runs.items()))
    final = WORK / first
    if (final / "model.safetensors").is_file():
        long_layer_shards(final, out)
    pack(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("smoke", "full"))
    parser.add_argument("--limit", type=float, default=540, help="seconds until every process is stopped")
    parser.add_argument("--steps", type=int, default=12, help="long steps")
    parser.add_argument("--batch", type=int, default=16, help="spans of --long-length tokens a long step")
    parser.add_argument("--long-length", type=int, default=4096, help="(a CPU dry run: 1024)")
    parser.add_argument("--text", help="the packed text (default .gpu/smoke or .gpu/long by mode)")
    parser.add_argument("--device", default="cuda", help="longdocs' device (a CPU dry run: cpu)")
    parser.add_argument("--e2e-steps", type=int, default=150)
    parser.add_argument("--train-documents", type=int, default=5000)
    parser.add_argument("--save-every", type=int, default=40)
    parser.add_argument("--log-every", type=int, default=10)
    parser.add_argument("--score-at", type=int, nargs="+", default=[40, 160])
    parser.add_argument("--variants", nargs="+", default=["readme"], choices=sorted(VARIANTS))
    args = parser.parse_args()
    out = Path(os.environ.get("OUT", "runs/gpu/out"))
    out.mkdir(parents=True, exist_ok=True)
    (smoke if args.mode == "smoke" else full)(args, out)


if __name__ == "__main__":
    main()
