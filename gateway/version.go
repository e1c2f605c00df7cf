package gateway

import "runtime/debug"

// DevVersion is the version of a build that says nothing of its own: not stamped with
// -ldflags -X, and built where the go command recorded no module version (a checkout
// built with -buildvcs=false, or a test).
const DevVersion = "0.1.0-dev"

// modulePath is toolshed's module, whose version a binary records.
const modulePath = "github.com/toolshed/toolshed"

func init() {
	bi, _ := debug.ReadBuildInfo()
	Version = resolveVersion(Version, bi)
}

// resolveVersion returns the version toolshed reports: the stamped one (-ldflags -X
// gateway.Version), else toolshed's module version as the build info records it (the
// main module's, "1.2.3" for go install github.com/toolshed/toolshed/cmd/toolshed@v1.2.3
// and a pseudo-version for a build from a git checkout; or, in a program that uses
// toolshed as a library, the version of the toolshed module it requires), else
// DevVersion. A leading "v" is dropped, so that a tag, git describe and goreleaser's
// {{.Version}} give one string: 1.2.3. bi may be nil (no build info).
func resolveVersion(stamped string, bi *debug.BuildInfo) string {
	v := stamped
	if v == "" && bi != nil {
		m := &bi.Main
		if m.Path != modulePath {
			m = nil
			for _, d := range bi.Deps {
				if d.Path == modulePath {
					m = d
					if d.Replace != nil {
						m = d.Replace
					}
					break
				}
			}
		}
		if m != nil && m.Version != "(devel)" {
			v = m.Version
		}
	}
	if v == "" {
		return DevVersion
	}
	if len(v) > 1 && v[0] == 'v' && v[1] >= '0' && v[1] <= '9' {
		v = v[1:]
	}
	return v
}
