"""`linformer lra prepare`: the LRA ListOps generator, the byte-level IMDB task, their configs and CLI."""
