"""The `linformer` command: a thin shell over library functions (`main(argv) -> int`)."""
