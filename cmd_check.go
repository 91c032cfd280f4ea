package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

var checkCommand = command{
	name:    "check",
	args:    "[--env-file FILE] [--probe [--yes]]",
	summary: "check the configuration and reach each configured target with a call that writes nothing",
	setup: func(fs *flag.FlagSet) func(invocation, []string) error {
		var c configFlags
		c.flags(fs)
		envFile := fs.String("env-file", "", envFileUsage)
		writes := fs.Bool("probe", false, "also WRITE to each onec_odata target (a COPY of the base only): a few throwaway documents, marked for deletion afterwards, to learn what the base does with client keys, repeats and long strings")
		yes := fs.Bool("yes", false, "with --probe: do not ask before writing")
		return func(inv invocation, args []string) error {
			if len(args) != 0 {
				return badUsage("check", "takes no arguments")
			}
			env, err := withEnvFile(inv.env, *envFile)
			if err != nil {
				return err
			}
			if *yes && !*writes {
				return badUsage("check", "--yes only goes with --probe")
			}
			if err := check(c, inv.stdout, env); err != nil || !*writes {
				return err
			}
			return checkWrites(c, inv, env, *yes)
		}
	},
}

// check validates the configuration and probes each target it points at
// a real system, printing per target what works and what to fix. It never
// starts the simulators and never prints a secret: a setting is named by
// its key and its variable, not its value, and what a target answered is
// redacted of the targets' secrets and the 1C user's name.
func check(c configFlags, stdout io.Writer, env func(string) string) error {
	path := c.config
	if path == "" {
		path = env("ONCEGATE_CONFIG")
	}
	cfg, err := c.load(env)
	if err != nil {
		fmt.Fprintf(stdout, "configuration: %v\n", err)
		return fmt.Errorf("%w: the configuration is not valid; fix the settings named above", errCheckFailed)
	}
	catalog, err := loadCatalog(cfg)
	if err != nil {
		fmt.Fprintf(stdout, "%v\n", err)
		return fmt.Errorf("%w: the intent definitions are not valid; fix the files named above", errCheckFailed)
	}
	if path == "" {
		fmt.Fprintln(stdout, "no configuration file (--config or $ONCEGATE_CONFIG): serve would run on the embedded defaults, and its targets are the built-in simulators; nothing to reach")
		return nil
	}
	fmt.Fprintf(stdout, "configuration %s: valid (contour %s, data %s, listen %s)\n", path, cfg.Contour, cfg.DataDir, cfg.Listen)
	fmt.Fprintf(stdout, "intents: %d served (%s)\n", len(catalog.All()), strings.Join(catalog.Names(), ", "))

	failed, checked := probeTargets(stdout, cfg, catalog, env, func(string) bool { return true })
	if failed > 0 {
		return fmt.Errorf("%w: %d of %d configured targets cannot be used; fix the settings named above", errCheckFailed, failed, checked)
	}
	return nil
}
