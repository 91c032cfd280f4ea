package main

import (
	"flag"
	"fmt"
	"runtime"
	"runtime/debug"
	"strconv"

	"github.com/oncegate/oncegate/store"
)

var versionCommand = command{
	name:    "version",
	summary: "print the binary's version, its build and the newest journal schema it knows",
	setup: func(fs *flag.FlagSet) func(invocation, []string) error {
		return func(inv invocation, args []string) error {
			if len(args) != 0 {
				return badUsage("version", "takes no arguments")
			}
			fmt.Fprintln(inv.stdout, versionLine())
			return nil
		}
	},
}

// versionLine says which binary this is: the module's version (or the
// commit it was built from), the Go release, the platform and the newest
// journal schema it migrates to, the facts an upgrade needs.
func versionLine() string {
	version, commit, dirty := "(devel)", "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.modified":
				dirty, _ = strconv.ParseBool(s.Value)
			}
		}
	}
	if len(commit) > 12 {
		commit = commit[:12]
	}
	if commit != "" {
		version += " commit " + commit
		if dirty {
			version += " (modified)"
		}
	}
	return fmt.Sprintf("oncegate %s, %s %s/%s, journal schema %d", version, runtime.Version(), runtime.GOOS, runtime.GOARCH, store.LatestVersion())
}
