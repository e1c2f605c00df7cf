#!/bin/sh
# The "client" that the MCP conformance suite's client role runs, for
# TestServeConformanceClient: toolshed serve --http with the suite's test server (the
# URL the suite appends) as its one HTTP upstream, and the go-sdk's conformance
# everything-client driving toolshed. The suite then judges what toolshed sends
# upstream. toolshed listens on a port of the system's choice (the suite runs
# scenarios in parallel) and says which in its log. Environment: TOOLSHED (the binary),
# CLIENT (the everything-client), and MCP_CONFORMANCE_* from the suite.
set -u
for url; do :; done
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
printf '{"mcpServers":{"up":{"type":"http","url":"%s"}}}' "$url" >"$dir/mcp.json"
"$TOOLSHED" serve --config "$dir/mcp.json" --http 127.0.0.1:0 --tool-search off --no-prefix --db off 2>"$dir/toolshed.log" &
pid=$!
i=0
until grep -q ' servers ready, ' "$dir/toolshed.log"; do
	i=$((i + 1))
	if [ $i -gt 600 ] || ! kill -0 $pid 2>/dev/null; then
		echo "conformance-client.sh: toolshed did not come up:" >&2
		cat "$dir/toolshed.log" >&2
		kill $pid 2>/dev/null
		exit 1
	fi
	sleep 0.1
done
endpoint=$(sed -n 's/^toolshed: serving MCP over Streamable HTTP at \(http:[^ ]*\) .*/\1/p' "$dir/toolshed.log")
"$CLIENT" "$endpoint"
rc=$?
kill -INT $pid
wait $pid
cat "$dir/toolshed.log" >&2
exit $rc
