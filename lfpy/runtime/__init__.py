"""The deterministic reactor runtime (see scheduler.py for the threading contract)."""
