"""The reproduction study (paper's Figure 3, Table 2 and the short-input question) as recipes of CLI runs."""

from linformer_kit.reproduction.config import ReproduceConfig
from linformer_kit.reproduction.recipe import Recipe, Run
from linformer_kit.reproduction.recipe_file import load_recipe
from linformer_kit.reproduction.results import collect, write_results
from linformer_kit.reproduction.results_tables import format_tables
from linformer_kit.reproduction.study import Outcome, command, run_study

__all__ = [
    "Outcome",
    "Recipe",
    "ReproduceConfig",
    "Run",
    "collect",
    "command",
    "format_tables",
    "load_recipe",
    "run_study",
    "write_results",
]
