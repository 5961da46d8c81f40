"""Parts of the agents' tools that other packages build on: the keyword index behind
`MemoryTool` (the browse environment searches its pages with it) and `ToolKind`, the
interaction kind a tool's steps are recorded as. The tools themselves (`Tool`, `ToolResult`,
`PythonTool`, `MemoryTool`) are exported by `overseer.runtime`."""

from overseer.runtime._tools import KeywordMemory, ToolKind

__all__ = ["KeywordMemory", "ToolKind"]
