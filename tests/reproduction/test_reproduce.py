"""The reproduction driver: recipe checks (before any run) and a seconds-long end-to-end smoke run."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from linformer_kit.cli.main import main
from linformer_kit.cli.reproduce import build_parser
from linformer_kit.reproduction import load_recipe

RECIPES = Path(__file__).parents[2] / "recipes"  # the committed recipes


def _recipe(tmp_path: Path, corpus: Path, sentiment_csv: Path, **changes) -> Path:
    recipe = {
        "tier": "smoke",
        "output_dir": str(tmp_path / "runs"),
        "results_dir": str(tmp_path / "results"),
        "pretrain": {
            "defaults": {
                "train": "{data}/train.txt",
                "validation": "{data}/valid.txt",
                "preset": "tiny",
                "seq_len": 32,
                "vocab_size": 300,
                "max_steps": 4,
                "per_device_train_batch_size": 4,
                "eval_strategy": "steps",
                "eval_steps": 2,
                "logging_steps": 2,
                "save_strategy": "no",
                "max_eval_blocks": 4,
                "disable_tqdm": True,
            },
            "runs": {
                "full": {"projected_length": None, "seq_len_schedule": "none"},
                "k8": {"projected_length": 8, "seq_len_schedule": "16:0.5,32:0.5"},
            },
        },
        "finetune": {
            "defaults": {
                "max_steps": 3,
                "per_device_train_batch_size": 8,
                "save_strategy": "no",
                "disable_tqdm": True,
                "text_column": "sentence",
            },
            "tasks": {
                "toy": {
                    "train": str(sentiment_csv / "train.csv"),
                    "validation": str(sentiment_csv / "dev.csv"),
                }
            },
            "models": ["k8"],
            "seeds": [1, 2],
            "from_scratch": ["k8"],
            "bag_of_words": True,
        },
        **changes,
    }
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe))
    return path


@pytest.mark.slow
def test_smoke_study_writes_results_for_every_run(tmp_path, corpus, sentiment_csv, transformers_log) -> None:
    recipe = _recipe(tmp_path, corpus, sentiment_csv)
    assert main(["reproduce", str(recipe), "--data", str(corpus), "--probe-lengths", "8", "32"]) == 0
    # the probe loads each encoder through load_pretrained: no load table of the MLM head it leaves out
    assert not [line for line in transformers_log if "LOAD REPORT" in line]
    results = json.loads((tmp_path / "results" / "results.json").read_text())
    runs = {r["name"]: r for r in results["runs"]}
    baselines = {f"toy-{kind}-s{seed}" for kind in ("scratch-k8", "bag-of-words") for seed in (1, 2)}
    assert set(runs) == {"full", "k8", "toy-k8-s1", "toy-k8-s2", *baselines}
    assert all(r["status"] == "ok" for r in runs.values())
    # from scratch: k8's shape and the study's tokenizer, no pretrained model
    scratch = runs["toy-scratch-k8-s1"]
    assert (scratch["pretrained"], scratch["projected_length"]) == ("scratch:k8", 8)
    assert "--preset tiny" in scratch["command"]
    assert "--tokenizer" in scratch["command"]
    assert "--model" not in scratch["command"]
    words = runs["toy-bag-of-words-s2"]
    assert words["pretrained"] == "bag-of-words"
    assert words["accuracy"] >= 0.9  # the label is one word: the words alone give it
    assert words["train_examples"] == runs["toy-k8-s2"]["train_examples"]  # the same examples
    assert runs["full"]["attention"] == "full"
    assert runs["full"]["projected_length"] is None
    assert runs["k8"]["projected_length"] == 8
    assert runs["k8"]["train_tokens"] == 4 * 4 * 32
    # what distinguishes runs beyond the model: where short blocks sit (pretrain's default), precision
    assert (runs["k8"]["short_block_positions"], runs["k8"]["dtype"]) == ("keep", "fp32")
    assert (runs["full"]["short_block_positions"], runs["full"]["dtype"]) == (None, "fp32")  # no schedule
    assert [p["step"] for p in runs["k8"]["curve"]] == [2, 4]  # validation perplexity by step
    # same tokenizer, same validation blocks and masks: one no-context floor for every pretraining run
    assert runs["k8"]["no_context_perplexity"] == runs["full"]["no_context_perplexity"] > 1
    assert runs["toy-k8-s2"]["projected_length"] == 8
    assert runs["toy-k8-s2"]["seed"] == 2
    assert runs["toy-k8-s1"]["command"].startswith("linformer finetune --output_dir")
    summary = {(s["dataset"], s["pretrained"]): s for s in results["finetune_summary"]}
    assert summary["toy", "k8"]["seeds"] == [1, 2]
    assert len(summary["toy", "k8"]["accuracies"]) == 2
    probe = {p["name"]: p for p in results["short_input_probe"]}
    assert {r["length"] for r in probe["k8"]["rows"]} == {8, 32}
    assert all(r["key_norm_ratio"] == 1.0 for r in probe["full"]["rows"])
    assert (tmp_path / "results" / "validation_perplexity.png").is_file()
    assert "| toy | k8 |" in (tmp_path / "results" / "results.md").read_text()
    # a second invocation reuses every finished run instead of training again
    before = (tmp_path / "runs" / "pretrain" / "k8" / "model.safetensors").stat().st_mtime_ns
    assert main(["reproduce", str(recipe), "--data", str(corpus), "--probe-lengths"]) == 0
    assert (tmp_path / "runs" / "pretrain" / "k8" / "model.safetensors").stat().st_mtime_ns == before
    _continues_on_another_machine(tmp_path, recipe, corpus, results)


def _continues_on_another_machine(tmp_path: Path, recipe: Path, corpus: Path, results: dict) -> None:
    """Only results_dir is committed: a new machine reruns nothing recorded, and only what changed."""
    assert (tmp_path / "results" / "tokenizer" / "tokenizer_config.json").is_file()
    shutil.rmtree(tmp_path / "runs")  # the weights are gone; results.json and the tokenizer stay
    committed = json.loads((tmp_path / "results" / "results.json").read_text())
    for record in committed["runs"]:  # as committed before records had these fields: read from options
        record.pop("short_block_positions", None), record.pop("dtype", None)
    (tmp_path / "results" / "results.json").write_text(json.dumps(committed))
    assert main(["reproduce", str(recipe), "--data", str(corpus), "--probe-lengths"]) == 0
    assert not (tmp_path / "runs" / "pretrain").exists()  # nothing trained again
    again = json.loads((tmp_path / "results" / "results.json").read_text())
    assert again["runs"] == results["runs"]
    assert again["short_input_probe"] == results["short_input_probe"]  # kept from the committed file
    raw = yaml.safe_load(recipe.read_text())
    raw["pretrain"]["runs"]["k8"]["max_steps"] = 2  # k8 changed: it and its finetunes run again
    recipe.write_text(yaml.safe_dump(raw))
    assert main(["reproduce", str(recipe), "--data", str(corpus), "--probe-lengths"]) == 0
    assert sorted(p.name for p in (tmp_path / "runs" / "pretrain").iterdir()) == ["k8"]
    command = (tmp_path / "runs" / "commands.sh").read_text()
    assert f"--tokenizer {tmp_path / 'results' / 'tokenizer'}" in command  # the committed tokenizer
    runs = {r["name"]: r for r in json.loads((tmp_path / "results" / "results.json").read_text())["runs"]}
    assert runs["k8"]["steps"] == 2
    assert runs["full"] == {r["name"]: r for r in results["runs"]}["full"]
    assert all(runs[f"toy-k8-s{seed}"]["status"] == "ok" for seed in (1, 2))
    assert (tmp_path / "runs" / "finetune" / "toy-k8-s1" / "metrics.json").is_file()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"pretrain": {"runs": {}}}, "pretrain.runs names no run"),
        ({"max_parallel": 0}, "max_parallel=0 must be an int >= 1"),
        ({"colour": "red"}, r"recipe has unknown keys \['colour'\]"),
        (
            {"pretrain": {"runs": {"a": {"learning_rte": 1e-3}}}},
            r"options \['learning_rte'\].*linformer pretrain",
        ),
        ({"pretrain": {"runs": {"a": {"output_dir": "x"}}}}, r"sets \['output_dir'\], which the driver sets"),
        ({"pretrain": {"runs": {"a": {"train": "{data}/missing.txt"}}}}, "train: no such file or folder"),
        (
            {"pretrain": {"runs": {"a": {}, "b": {"trunk": {"run": "c", "step": 2}}}}},
            r"b.trunk names 'c': it must be another pretraining run without a trunk of its own, one of \['a'\]",
        ),
        (
            {"pretrain": {"runs": {"a": {"seed": 1}, "b": {"trunk": {"run": "a", "step": 2}}}}},
            r"b and its trunk 'a' differ in \['seed'\]: a branch may differ from its trunk in attention only",
        ),
        (
            {"pretrain": {"runs": {"a": {}, "b": {"trunk": {"run": "a", "step": 0}}}}},
            r"b.trunk must be \{run: NAME, step: N\} with N >= 1, got \{'run': 'a', 'step': 0\}",
        ),
        (
            {
                "pretrain": {
                    "runs": {
                        "a": {},
                        "b": {"trunk": {"run": "a", "step": 2}},
                        "c": {"trunk": {"run": "a", "step": 4}},
                    }
                }
            },
            r"'a' is the trunk of runs at steps 2 and 4: a trunk keeps one step",
        ),
    ],
)
def test_bad_recipes_are_refused_before_any_run(tmp_path, corpus, sentiment_csv, change, message) -> None:
    recipe = _recipe(tmp_path, corpus, sentiment_csv, **{"finetune": None, **change})
    with pytest.raises(ValueError, match=message):
        load_recipe(recipe, str(corpus))
    assert not (tmp_path / "runs").exists()


def test_finetune_of_an_unknown_model_is_refused(tmp_path, corpus, sentiment_csv) -> None:
    recipe = _recipe(tmp_path, corpus, sentiment_csv)
    raw = yaml.safe_load(recipe.read_text())
    raw["finetune"]["models"] = ["k9"]
    recipe.write_text(yaml.safe_dump(raw))
    with pytest.raises(ValueError, match=r"finetune.models \['k9'\] are not pretraining runs"):
        load_recipe(recipe, str(corpus))


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("from_scratch", ["k9"], r"finetune.from_scratch \['k9'\] are not pretraining runs"),
        ("bag_of_words", "yes", "finetune.bag_of_words='yes' must be true or false"),
    ],
)
def test_bad_baselines_are_refused(tmp_path, corpus, sentiment_csv, key, value, message) -> None:
    recipe = _recipe(tmp_path, corpus, sentiment_csv)
    raw = yaml.safe_load(recipe.read_text())
    raw["finetune"][key] = value
    recipe.write_text(yaml.safe_dump(raw))
    with pytest.raises(ValueError, match=message):
        load_recipe(recipe, str(corpus))


def test_a_task_may_name_its_own_models(tmp_path, corpus, sentiment_csv) -> None:
    recipe = _recipe(tmp_path, corpus, sentiment_csv)
    raw = yaml.safe_load(recipe.read_text())
    toy = raw["finetune"]["tasks"]["toy"]
    raw["finetune"].pop("from_scratch")
    raw["finetune"]["models"] = ["full", "k8"]
    raw["finetune"]["tasks"]["toy-exact"] = {**toy, "short_inputs": "exact", "models": ["k8"]}
    recipe.write_text(yaml.safe_dump(raw))
    runs = {r.name: r for r in load_recipe(recipe, str(corpus)).finetune}
    assert sorted(runs) == [
        "toy-exact-k8-s1",
        "toy-exact-k8-s2",
        "toy-full-s1",
        "toy-full-s2",
        "toy-k8-s1",
        "toy-k8-s2",
    ]
    assert runs["toy-exact-k8-s1"].options["short_inputs"] == "exact"
    assert "models" not in runs["toy-exact-k8-s1"].options  # the driver's, not a CLI option

    raw["finetune"]["tasks"]["toy-exact"]["models"] = ["k9"]
    recipe.write_text(yaml.safe_dump(raw))
    with pytest.raises(ValueError, match=r"finetune.models \['k9'\] are not pretraining runs"):
        load_recipe(recipe, str(corpus))


def test_a_task_may_name_its_own_from_scratch_shapes(tmp_path, corpus, sentiment_csv) -> None:
    """A task's `from_scratch` replaces the section's for that task alone (e.g. more shapes on one task)."""
    recipe = _recipe(tmp_path, corpus, sentiment_csv)
    raw = yaml.safe_load(recipe.read_text())
    toy = raw["finetune"]["tasks"]["toy"]
    shape = {"preset": "tiny", "projected_length": 4}  # a shape no pretraining run has
    raw["finetune"]["tasks"]["long"] = {**toy, "from_scratch": {"full": None, "k4": shape}}
    recipe.write_text(yaml.safe_dump(raw))
    runs = {r.name: r for r in load_recipe(recipe, str(corpus)).finetune}
    scratch = sorted(name for name in runs if "scratch" in name)
    assert scratch == ["long-scratch-full-s1", "long-scratch-full-s2", "long-scratch-k4-s1",
                       "long-scratch-k4-s2", "toy-scratch-k8-s1", "toy-scratch-k8-s2"]  # fmt: skip
    assert runs["long-scratch-full-s1"].options["projected_length"] is None  # the pretraining run's shape
    assert runs["long-scratch-k4-s2"].options["projected_length"] == 4
    assert runs["toy-scratch-k8-s1"].options["projected_length"] == 8
    assert "from_scratch" not in runs["long-k8-s1"].options  # the driver's, not a CLI option
    raw["finetune"]["tasks"]["long"]["from_scratch"] = ["k16"]
    recipe.write_text(yaml.safe_dump(raw))
    with pytest.raises(
        ValueError, match=r"finetune.tasks.long.from_scratch \['k16'\] are not pretraining runs"
    ):
        load_recipe(recipe, str(corpus))


def test_dry_run_prints_every_command_and_runs_nothing(tmp_path, corpus, sentiment_csv, capsys) -> None:
    recipe = _recipe(tmp_path, corpus, sentiment_csv)
    assert main(["reproduce", str(recipe), "--data", str(corpus), "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 6  # full, k8, toy-k8-s1/2, toy-scratch-k8-s1/2 (bag-of-words runs in the driver)
    assert "--projected_length none" in lines[0]
    assert f"--tokenizer {tmp_path / 'runs' / 'pretrain' / 'full'}" in lines[1]
    assert f"--tokenizer {tmp_path / 'runs' / 'pretrain' / 'full'}" in lines[5]
    assert not (tmp_path / "runs").exists()


def test_dry_run_prints_what_only_selects(tmp_path, corpus, sentiment_csv, capsys) -> None:
    recipe = _recipe(tmp_path, corpus, sentiment_csv)
    argv = ["reproduce", str(recipe), "--data", str(corpus), "--dry-run", "--only"]
    assert main([*argv, "k8"]) == 0  # the run and the finetunes that start from it
    assert [line.split()[3].rsplit("/", 1)[1] for line in capsys.readouterr().out.splitlines()] == [
        "k8", "toy-k8-s1", "toy-k8-s2"]  # fmt: skip
    assert main([*argv, "toy-scratch-k8-s2"]) == 0
    assert [line.split()[3].rsplit("/", 1)[1] for line in capsys.readouterr().out.splitlines()] == [
        "toy-scratch-k8-s2"]  # fmt: skip


def test_only_refuses_a_name_that_selects_nothing(tmp_path, corpus, sentiment_csv, capsys) -> None:
    recipe = _recipe(tmp_path, corpus, sentiment_csv)
    assert main(["reproduce", str(recipe), "--data", str(corpus), "--only", "k8", "k9"]) == 2
    assert (
        "only: 'k9' names no run of the recipe (tier 'smoke'); give run names (full, k8"
        in capsys.readouterr().err
    )
    assert not (tmp_path / "runs" / "pretrain").exists()


@pytest.mark.slow
def test_a_committed_tokenizer_is_read_by_the_first_run_too(tmp_path, corpus, sentiment_csv, capsys) -> None:
    # a study continued on another machine, whose runs go in another order, never trains a second tokenizer
    recipe = _recipe(tmp_path, corpus, sentiment_csv)
    committed = tmp_path / "results" / "tokenizer"
    committed.mkdir(parents=True)
    (committed / "tokenizer_config.json").write_text("{}")
    assert main(["reproduce", str(recipe), "--data", str(corpus), "--dry-run", "--only", "full", "k8"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert all(f"--tokenizer {committed}" in line for line in lines[:2])
    assert "--vocab_size" not in lines[0]  # it sizes a tokenizer trained here; none is


def test_data_folder_defaults_to_linformer_data(tmp_path, corpus, sentiment_csv, capsys, monkeypatch) -> None:
    monkeypatch.setenv("LINFORMER_DATA", str(corpus))
    recipe = _recipe(tmp_path, corpus, sentiment_csv)
    assert main(["reproduce", str(recipe), "--dry-run"]) == 0
    assert f"--train {corpus / 'train.txt'}" in capsys.readouterr().out.splitlines()[0]


def test_a_recipe_using_data_needs_a_folder(tmp_path, corpus, sentiment_csv, capsys, monkeypatch) -> None:
    monkeypatch.delenv("LINFORMER_DATA", raising=False)
    assert build_parser().parse_args(["r.yaml"]).data is None  # no default path, inside or outside the repo
    recipe = _recipe(tmp_path, corpus, sentiment_csv)
    with pytest.raises(ValueError, match=r"full.train '\{data\}/train.txt' uses \{data\}.*--data DIR"):
        load_recipe(recipe)
    assert main(["reproduce", str(recipe), "--dry-run"]) == 2
    assert "linformer reproduce: error:" in capsys.readouterr().err
    # a recipe with no {data} in it needs no data folder
    raw = yaml.safe_load(recipe.read_text())
    raw["pretrain"]["defaults"].update(train=str(corpus / "train.txt"), validation=str(corpus / "valid.txt"))
    recipe.write_text(yaml.safe_dump(raw))
    assert len(load_recipe(recipe).runs) == 6


@pytest.mark.slow
def test_a_run_cut_after_a_checkpoint_is_resumed_not_restarted(tmp_path, corpus, sentiment_csv) -> None:
    recipe = _recipe(tmp_path, corpus, sentiment_csv)
    raw = yaml.safe_load(recipe.read_text())
    raw["pretrain"]["defaults"].update(save_strategy="steps", save_steps=2, save_total_limit=3)
    raw.pop("finetune")
    recipe.write_text(yaml.safe_dump(raw))
    assert main(["reproduce", str(recipe), "--data", str(corpus), "--probe-lengths"]) == 0
    k8 = tmp_path / "runs" / "pretrain" / "k8"
    finished = (k8 / "model.safetensors").read_bytes()

    # what a run cut between step 2 and step 4 leaves: checkpoint-2 and the curve it wrote so far
    for name in ("metrics.json", "model.safetensors", "README.md"):
        (k8 / name).unlink()
    for path in sorted((k8 / "checkpoint-4").iterdir()):
        path.unlink()
    (k8 / "checkpoint-4").rmdir()
    assert main(["reproduce", str(recipe), "--data", str(corpus), "--collect-only", "--probe-lengths"]) == 1
    results = json.loads((tmp_path / "results" / "results.json").read_text())
    cut = {r["name"]: r for r in results["runs"]}["k8"]
    assert cut["status"] == "unfinished"
    assert [p["step"] for p in cut["curve"]] == [2, 4]  # its curve as written while it ran

    assert main(["reproduce", str(recipe), "--data", str(corpus), "--probe-lengths"]) == 0
    assert "--resume true" in (tmp_path / "runs" / "commands.sh").read_text().splitlines()[-1]
    assert (k8 / "model.safetensors").read_bytes() == finished  # the weights of the uninterrupted run
    resumed = {r["name"]: r for r in json.loads((tmp_path / "results" / "results.json").read_text())["runs"]}
    assert resumed["k8"]["resumed_from_step"] == 2  # its `seconds` cover steps 3 and 4 only


@pytest.mark.slow
def test_a_branch_starts_at_its_trunks_checkpoint_and_ends_as_from_step_0(
    tmp_path, corpus, sentiment_csv
) -> None:
    recipe = _recipe(tmp_path, corpus, sentiment_csv)
    raw = yaml.safe_load(recipe.read_text())
    raw["pretrain"]["defaults"].update(save_strategy="steps", save_steps=2, seq_len_schedule="16:0.5,32:0.5")
    raw["pretrain"]["runs"] = {"full": {"projected_length": None},
                               "k16": {"projected_length": 16, "trunk": {"run": "full", "step": 2}}}  # fmt: skip
    raw.pop("finetune")
    recipe.write_text(yaml.safe_dump(raw))
    assert main(["reproduce", str(recipe), "--data", str(corpus)]) == 0
    commands = (tmp_path / "runs" / "commands.sh").read_text().splitlines()
    assert "--keep_checkpoint 2" in next(line for line in commands if "pretrain/full " in line)
    kept = tmp_path / "runs" / "pretrain" / "full" / "trunk-2"
    assert commands[-2] == f"# k16: checkpoint-2 written from {kept} (reproduction/branch.py)"
    assert commands[-1].endswith("--resume true")  # the branch resumes the checkpoint the study wrote
    results = json.loads((tmp_path / "results" / "results.json").read_text())
    record = {r["name"]: r for r in results["runs"]}["k16"]
    assert record["branched_from"] == {"trunk": "full", "checkpoint": "trunk-2", "step": 2}
    assert record["resumed_from_step"] == 2
    assert [p["step"] for p in record["curve"]] == [2, 4]  # the trunk's evaluation, then its own
    k16 = tmp_path / "runs" / "pretrain" / "k16"
    branched = (k16 / "model.safetensors").read_bytes()

    # where the trunk's checkpoint is gone (another machine), the run trains from step 0: the same weights
    shutil.rmtree(tmp_path / "runs" / "pretrain" / "full" / "trunk-2")
    shutil.rmtree(k16)
    results["runs"] = [r for r in results["runs"] if r["name"] != "k16"]  # not committed: it runs again
    (tmp_path / "results" / "results.json").write_text(json.dumps(results))
    assert main(["reproduce", str(recipe), "--data", str(corpus)]) == 0
    commands = (tmp_path / "runs" / "commands.sh").read_text().splitlines()
    assert "--resume" not in commands[-1]
    assert not commands[-2].startswith("# k16")
    assert (k16 / "model.safetensors").read_bytes() == branched


def test_panels_draw_the_named_runs_and_unknown_names_are_refused(tmp_path, corpus, sentiment_csv) -> None:
    from linformer_kit.reproduction import write_results

    curve = [{"step": 2, "val_perplexity": 30.0, "seq_len": 32}, {"step": 4, "val_perplexity": 20.0}]
    runs = [
        {
            "name": name,
            "task": "pretrain",
            "status": "ok",
            "curve": curve,
            "no_context_perplexity": 40.0,
            "attention": "full",
            "layer_norm": "pre",
            "seq_len": 32,
            "val_perplexity": 20.0,
            **dict.fromkeys(
                ("projected_length", "sharing", "projection", "projection_init", "projection_scaling")
            ),
        }
        for name in ("full", "k8")
    ]
    results = {"tier": "t", "device": "cpu", "runs": runs, "finetune_summary": []}
    results["recipe"] = {"panels": {"k": ["full", "k8"], "seeds": ["full", "k8-s2"]}}
    paths = write_results(results, tmp_path / "out")
    assert tmp_path / "out" / "panels.png" in paths
    assert (tmp_path / "out" / "panels.png").stat().st_size > 1000

    recipe = _recipe(tmp_path, corpus, sentiment_csv, panels={"k": ["full", "k9"]})
    with pytest.raises(ValueError, match=r"panels\['k'\] names \['k9'\], not pretraining runs"):
        load_recipe(recipe, str(corpus))


def test_runs_evaluated_without_training_get_a_table_and_no_plot(tmp_path) -> None:
    from linformer_kit.reproduction import write_results

    run = {
        "name": "k8-0",
        "task": "pretrain",
        "status": "ok",
        "curve": [{"step": 0, "val_perplexity": 30.0, "seq_len": 32}],  # max_steps: 0
        "no_context_perplexity": 40.0,
        "attention": "linformer",
        "layer_norm": "pre",
        "seq_len": 32,
        "val_perplexity": 30.0,
        "projected_length": 8,
        **dict.fromkeys(("sharing", "projection", "projection_init", "projection_scaling")),
    }
    results = {"tier": "t", "device": "cpu", "runs": [run], "finetune_summary": []}
    results["recipe"] = {"panels": {"k": ["k8-0"]}}
    assert write_results(results, tmp_path) == [tmp_path / "results.json", tmp_path / "results.md"]
    assert "| k8-0 |" in (tmp_path / "results.md").read_text()


def test_a_run_not_run_yet_is_described_by_its_options_defaults_or_its_init_from_model(tmp_path) -> None:
    """Its row says what it will be: pretrain's defaults for a new model, its source model's layout for an
    `init_from` run (unknown, '–', where that model is not on this machine), never a made-up 'post'."""
    from linformer_kit.models import LinformerConfig
    from linformer_kit.reproduction.recipe import Run
    from linformer_kit.reproduction.results import _pretrain_record
    from linformer_kit.reproduction.results_tables import format_tables
    from linformer_kit.reproduction.study import Outcome

    source = tmp_path / "trained"
    LinformerConfig(layer_norm="pre", projection="conv", projected_length=8).save_pretrained(source)
    options = {"projected_length": 8, "seq_len": 32}
    runs = {
        "new": {},
        "continued": {"init_from": str(source)},
        "elsewhere": {"init_from": str(tmp_path / "not-here")},
    }
    records = [
        {"name": name, "task": "pretrain", "status": "not run",
         **_pretrain_record(Outcome(Run(name, "pretrain", {**options, **extra}), tmp_path / name, []), None)}
        for name, extra in runs.items()
    ]  # fmt: skip
    layouts = {r["name"]: (r["layer_norm"], r["projection"], r["projection_init"]) for r in records}
    assert layouts == {
        "new": ("post", "linear", "window"),  # PretrainConfig's defaults
        "continued": ("pre", "conv", LinformerConfig().projection_init),  # the model's own
        "elsewhere": (None, None, None),
    }
    table = format_tables({"tier": "t", "device": "cpu", "runs": records, "finetune_summary": []})
    assert "| elsewhere | linformer | 8 | – | – | – | – | – | 32 |" in table


@pytest.mark.parametrize("name", ["gpu", "cpu"], ids=["published-setting", "cpu-budget"])  # runs without CUDA
def test_the_lra_recipes_train_from_scratch_with_no_pretraining(tmp_path, name, capsys) -> None:
    """recipes/lra/*.yaml: finetune-only studies; each run names its tokenizer kind and its own shape."""
    for path in ("listops/basic_train.tsv", "listops/basic_test.tsv", "text/train.tsv", "text/test.tsv"):
        (tmp_path / path).parent.mkdir(exist_ok=True)
        (tmp_path / path).write_text("Source\tTarget\n")
    recipe = load_recipe(recipe_path(name), str(tmp_path))
    assert recipe.pretrain == []
    starts = {r.options.get("projection_init") for r in recipe.finetune if r.options["projected_length"]}
    assert starts == {"window", "random"}
    assert {r.task for r in recipe.finetune} == {"listops", "text"}
    overrides = ["--output-dir", str(tmp_path / "runs"), "--results-dir", str(tmp_path / "results")]
    assert main(["reproduce", str(recipe_path(name)), "--data", str(tmp_path), "--dry-run", *overrides]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(recipe.finetune)
    assert all("--preset lra" in line and "--model" not in line for line in lines)
    assert {line.split("--tokenizer ")[1].split()[0] for line in lines} == {"listops", "bytes"}


def recipe_path(name: str) -> Path:
    return RECIPES / "lra" / f"{name}.yaml"


def test_a_recipe_without_pretraining_must_define_its_models(tmp_path, corpus, sentiment_csv) -> None:
    recipe = _recipe(tmp_path, corpus, sentiment_csv)
    raw = yaml.safe_load(recipe.read_text())
    raw.pop("pretrain")
    recipe.write_text(yaml.safe_dump(raw))
    with pytest.raises(ValueError, match=r"missing 'pretrain'.*from_scratch defines its models"):
        load_recipe(recipe, str(corpus))
    raw["finetune"].update(models=[], from_scratch={"k8": {"preset": "tiny", "projected_length": 8}})
    raw["finetune"]["tasks"]["toy"]["tokenizer"] = "word"
    recipe.write_text(yaml.safe_dump(raw))
    runs = load_recipe(recipe, str(corpus)).finetune
    assert [r.name for r in runs] == ["toy-scratch-k8-s1", "toy-scratch-k8-s2"]
    assert runs[0].options["tokenizer"] == "word"
    assert runs[0].classifier == "scratch:k8"


def test_accuracy_by_length_counts_every_prediction(tmp_path: Path) -> None:
    from linformer_kit.reproduction.finetune_summary import accuracy_by_length

    rows = [
        (5, 1, 1),
        (300, 0, 0),
        (600, 1, 0),
        (1500, 1, 1),
        (1600, 0, 0),
        (4000, 1, 1),
    ]  # tokens, label, predicted
    path = tmp_path / "eval_predictions.jsonl"
    path.write_text("".join(json.dumps({"tokens": t, "label": y, "predicted": p}) + "\n" for t, y, p in rows))
    buckets = {b["tokens"]: (b["examples"], b["accuracy"]) for b in accuracy_by_length(path)}
    assert buckets == {"1-16": (1, 1.0), "257-512": (1, 1.0), "513-1024": (1, 0.0), "1025-2048": (2, 1.0),
                       "2049-4096": (1, 1.0)}  # fmt: skip
    assert sum(examples for examples, _ in buckets.values()) == len(rows)


def test_a_finetune_only_table_has_no_pretraining_section_and_shows_the_majority_class() -> None:
    from linformer_kit.reproduction.finetune_summary import summarise_finetuning
    from linformer_kit.reproduction.results_tables import format_tables

    runs = [
        {"name": f"text-k256-s{seed}", "task": "finetune", "status": "ok", "dataset": "text", "seed": seed,
         "pretrained": "scratch:k256", "accuracy": accuracy, "majority_class_accuracy": 0.5}
        for seed, accuracy in ((1, 0.57), (2, 0.55))
    ]  # fmt: skip
    summary = summarise_finetuning(runs)
    assert summary[0]["majority_class_accuracy"] == 0.5
    table = format_tables({"tier": "lra-cpu", "device": "cpu", "runs": runs, "finetune_summary": summary})
    assert "## Pretraining" not in table
    assert "\n\n\n" not in table
    assert "| text | scratch:k256 | 56.00 ± 1.41 | 50.0 | 1: 0.5700, 2: 0.5500 |" in table


@pytest.mark.parametrize("count", [3, 10, 11, 20, 31])
def test_every_run_of_the_panels_gets_its_own_colour(count) -> None:
    from matplotlib.colors import to_hex

    from linformer_kit.reproduction.results_plots import run_colours

    colours = run_colours([f"run{i}" for i in range(count)])
    assert len(colours) == count
    assert len({to_hex(c) for c in colours.values()}) == count  # no two runs alike (11 used to reuse C0)


def test_a_random_start_branch_without_its_trunk_is_skipped_not_run_from_step_0(
    tmp_path, corpus, sentiment_csv, capsys
) -> None:
    from linformer_kit.reproduction.study import Outcome, _run_parallel, command, needs_its_trunk

    recipe = _recipe(tmp_path, corpus, sentiment_csv)
    raw = yaml.safe_load(recipe.read_text())
    raw["pretrain"]["runs"] = {
        "full": {"projected_length": None},
        "k16-random": {
            "projected_length": 16,
            "projection_init": "random",
            "trunk": {"run": "full", "step": 2},
        },
        "k16": {"projected_length": 16, "trunk": {"run": "full", "step": 2}},
    }
    raw.pop("finetune")
    recipe.write_text(yaml.safe_dump(raw))
    loaded = load_recipe(recipe, str(corpus))
    runs = {r.name: r for r in loaded.pretrain}
    assert needs_its_trunk(runs["k16-random"])
    assert not needs_its_trunk(runs["k16"])
    (tmp_path / "runs" / "logs").mkdir(parents=True)
    outcome = Outcome(runs["k16-random"], tmp_path / "out", command(loaded, runs["k16-random"], None))
    _run_parallel([outcome], loaded, echo=True)
    assert (
        "skipped  pretrain k16-random: it starts from its trunk full's checkpoint at step 2"
        in capsys.readouterr().out
    )
    assert outcome.returncode is None
    assert not outcome.resume
    assert not (tmp_path / "runs" / "logs" / "pretrain-k16-random.log").exists()


def test_a_pretraining_run_with_a_complete_checkpoint_is_decided_a_resume(
    tmp_path, corpus, sentiment_csv, monkeypatch
) -> None:
    """Where the study decides to run a run, it decides whether that run resumes: `Outcome.resume`, and its
    command ends `--resume true`; a run with no complete checkpoint starts again, its debris deleted."""
    from linformer_kit.reproduction import study

    recipe = load_recipe(_recipe(tmp_path, corpus, sentiment_csv), str(corpus))
    full, k8 = (study.run_dir(recipe, run) for run in recipe.pretrain)
    (full / "tokenizer_config.json").parent.mkdir(parents=True)
    (full / "tokenizer_config.json").write_text("{}")  # the shared tokenizer k8 reads
    (k8 / "checkpoint-2").mkdir(parents=True)  # an incomplete one: debris
    monkeypatch.setattr(
        study, "last_complete_checkpoint", lambda d: (d / "checkpoint-4", {}) if d == full else (None, {})
    )
    outcomes = [
        study.Outcome(run, study.run_dir(recipe, run), study.command(recipe, run, full))
        for run in recipe.pretrain
    ]
    assert [study._needs_running(o, recipe) for o in outcomes] == [True, True]
    assert [o.resume for o in outcomes] == [True, False]
    assert outcomes[0].command == [*study.command(recipe, recipe.pretrain[0], full), "--resume", "true"]
    assert outcomes[1].command == study.command(recipe, recipe.pretrain[1], full)
    assert full.is_dir()
    assert not k8.exists()


COMMITTED_RECIPES = sorted(RECIPES.rglob("*.yaml"))


@pytest.mark.parametrize("path", COMMITTED_RECIPES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_committed_recipe_passes_the_checks_a_run_makes_first(tmp_path: Path, path: Path) -> None:
    """A recipe that names an unknown option, run or trunk fails `load_recipe` before its first run: checked here,
    not hours into a study. The data files it names are stand-ins (load_recipe checks only that they exist)."""
    recipe = load_with_stand_in_data(path, tmp_path)
    assert recipe.pretrain or recipe.finetune


def load_with_stand_in_data(path: Path, data: Path):
    """load_recipe(path) with an empty file at every {data}/... path it names (it checks only that they exist)."""
    for relative in re.findall(r"\{data\}/([^'\"\s]+)", path.read_text()):
        (data / relative).parent.mkdir(parents=True, exist_ok=True)
        (data / relative).touch()
    return load_recipe(path, str(data))


def test_runs_sharing_options_through_a_yaml_merge_key_get_them_all(tmp_path: Path) -> None:
    """cpu-paper-more's k128-30000 runs are k128-24000's options (`<<: *k128-long`) with only the steps,
    schedule and seed changed: a merge key the loader ignored would start them as new, different models."""
    recipe = load_with_stand_in_data(RECIPES / "reproduction" / "cpu-paper-more.yaml", tmp_path)
    runs = {r.name: r.options for r in recipe.pretrain}
    base, longer, other_seed = runs["k128-24000"], runs["k128-30000"], runs["k128-30000-s43"]

    def without(options: dict, *names: str) -> dict:
        return {k: v for k, v in options.items() if k not in names}

    assert without(longer, "max_steps", "seq_len_schedule") == without(base, "max_steps", "seq_len_schedule")
    assert without(other_seed, "seed") == without(longer, "seed")
    assert [base["max_steps"], longer["max_steps"]] == [24000, 30000]
    assert [longer["seed"], other_seed["seed"]] == [42, 43]
    assert [longer["preset"], longer["short_inputs"]] == ["mini", "exact"]  # the anchor's, not the defaults
