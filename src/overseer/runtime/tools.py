"""Parts of the agents' tools that other packages build on: the keyword index behind
`MemoryTool` (the browse environment searches its pages with it). The tools themselves
(`Tool`, `ToolResult`, `PythonTool`, `MemoryTool`) are exported by `overseer.runtime`."""

from overseer.runtime._tools import KeywordMemory

__all__ = ["KeywordMemory"]
