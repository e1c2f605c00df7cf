// Package toolsearch is tool search for Go agents using the Anthropic API: it keeps the
// definitions of many tools out of the prompt and lets the model load the few it needs.
//
// Tools turns a catalog snapshot (or, with ToolsFromMCP, a live MCP server's tool list)
// into the tools of a Messages API request. Each tool goes out under its qualified name
// with its description and input schema exactly as the catalog holds them, and with
// defer_loading decided the way Anthropic's mcp_toolset decides it: a tool's entry in its
// server's configs overrides the server's default_config, which overrides
// Options.DeferByDefault; pinned tools (alwaysLoad) are never deferred. With
// Options.Search set, Tools adds Anthropic's server-side search tool
// (tool_search_tool_regex_20251119 or tool_search_tool_bm25_20251119), or toolshed's own
// client-side one.
//
// A Searcher is that client-side search tool: a custom tool, "search_tools", whose
// results are tool_reference blocks ranked by toolshed's search, for models or accounts
// without the server-side tool search, or for better ranking than plain BM25.
//
// CheckQuery and Truncate check a query against the API's limits before it is sent, and
// RetryPolicy says whether and when to retry after a tool_search_tool_result_error.
package toolsearch
