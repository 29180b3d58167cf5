"""Stand-in for Harbor 0.20's package layout (only what the adapter imports): the real one is not installable
here (no PyPI). Its BaseAgent mirrors Harbor's constructor (logs_dir, model_name, …)."""
