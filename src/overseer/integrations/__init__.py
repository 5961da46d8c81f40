"""Adapters that put overseer plug-ins into other agent frameworks (import the submodule)."""
