"""Stand-in for Pier 0.3's package layout (only what the adapter imports): the real one is not installable
here (no PyPI). Its BaseAgent mirrors Pier's constructor (logs_dir, model_name, …)."""
