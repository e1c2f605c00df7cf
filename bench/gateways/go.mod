module github.com/toolshed/toolshed/bench/gateways

go 1.26
