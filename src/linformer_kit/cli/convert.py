"""`linformer convert` (placeholder until its issue lands)."""

from __future__ import annotations

import argparse


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser("convert", help="(not implemented yet)")
    return parser


def run(args: argparse.Namespace) -> int:
    print("linformer convert: not implemented yet")
    return 2
