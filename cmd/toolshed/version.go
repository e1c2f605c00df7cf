package main

import (
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/toolshed/toolshed/gateway"
)

// runVersion prints toolshed's version: the one it reports to MCP clients and upstreams
// (gateway.Version), with the Go toolchain and, when the binary records them, the
// source revision it was built from.
func runVersion(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.Usage = func() {
		printUsage(stdout, fs, "", "Prints toolshed's version (also toolshed --version), the Go version it was built with, and the source revision when the build recorded it.")
	}
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
	}
	bi, _ := debug.ReadBuildInfo()
	writeVersion(stdout, gateway.Version, bi)
	return nil
}

// writeVersion writes the lines of toolshed version:
//
//	toolshed 1.2.3
//	go1.26.8 linux/amd64
//	revision 8606f0a1b2c3..., committed 2026-12-06T19:40:00Z, with uncommitted changes
//
// The revision line is there only when the go command recorded the source's revision
// (vcs.revision; a build from a git checkout, not go install of a version nor a build
// with -buildvcs=false). bi may be nil.
func writeVersion(w io.Writer, version string, bi *debug.BuildInfo) {
	fmt.Fprintf(w, "toolshed %s\n", version)
	goVersion := runtime.Version()
	var vcs map[string]string
	if bi != nil {
		if bi.GoVersion != "" {
			goVersion = bi.GoVersion
		}
		vcs = map[string]string{}
		for _, s := range bi.Settings {
			vcs[s.Key] = s.Value
		}
	}
	fmt.Fprintf(w, "%s %s/%s\n", goVersion, runtime.GOOS, runtime.GOARCH)
	if rev := vcs["vcs.revision"]; rev != "" {
		line := "revision " + rev
		if t := vcs["vcs.time"]; t != "" {
			line += ", committed " + t
		}
		if vcs["vcs.modified"] == "true" {
			line += ", with uncommitted changes"
		}
		fmt.Fprintln(w, line)
	}
}
