// Package buildinfo says which build of the gateway is running: `gateway version` prints
// it, and traces carry it as service.version.
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// version is set at build time with
// -ldflags "-X github.com/nirmata/llm-gateway/internal/buildinfo.version=v1.2.3" (the
// Dockerfile does).
var version = ""

// Version is the gateway's version: the one set at build time, else the module version
// the binary was built from; "" for a development build, which has neither.
func Version() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return ""
}

// String is the line `gateway version` prints: the version ("devel" without one), the VCS
// revision when the build recorded it, and the Go version.
func String() string {
	v, rev, modified := Version(), "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if v == "" {
		v = "devel"
	}
	out := "gateway " + v
	if rev != "" {
		out += " (" + rev[:min(12, len(rev))]
		if modified {
			out += ", modified"
		}
		out += ")"
	}
	return out + " " + runtime.Version()
}
