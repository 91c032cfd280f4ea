package main

import (
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/oncegate/oncegate/server/intent"
)

var intentsListCommand = command{
	name:    "intents list",
	summary: "list the intents this configuration serves: each definition's name, version, target, scope, money and file",
	setup: func(fs *flag.FlagSet) func(invocation, []string) error {
		var c configFlags
		c.flags(fs)
		return func(inv invocation, args []string) error {
			if len(args) != 0 {
				return badUsage("intents list", "takes no arguments")
			}
			cat, err := c.catalog(inv.env)
			if err != nil {
				return err
			}
			printIntents(inv.stdout, cat)
			return nil
		}
	},
}

var intentsShowCommand = command{
	name:    "intents show",
	args:    "NAME",
	summary: "print one intent's definitions: facts, labels, references, limits, mapping and schema",
	setup: func(fs *flag.FlagSet) func(invocation, []string) error {
		var c configFlags
		c.flags(fs)
		return func(inv invocation, args []string) error {
			if len(args) != 1 {
				return badUsage("intents show", "say which intent, e.g. oncegate intents show invoice.create")
			}
			cat, err := c.catalog(inv.env)
			if err != nil {
				return err
			}
			var found []*intent.Intent
			for _, in := range cat.Definitions() {
				if in.Name == args[0] {
					found = append(found, in)
				}
			}
			if len(found) == 0 {
				return fmt.Errorf("no intent %q is served; oncegate intents list names them", args[0])
			}
			for i, in := range found {
				if i > 0 {
					fmt.Fprintln(inv.stdout)
				}
				showIntent(inv.stdout, in)
			}
			return nil
		}
	},
}

var intentsCheckCommand = command{
	name:    "intents check",
	args:    "[--env-file FILE]",
	summary: "load every definition strictly and check each against its live target, writing nothing: the 1C service or publication has what its mapping names, the CRM its method and fields",
	setup: func(fs *flag.FlagSet) func(invocation, []string) error {
		var c configFlags
		c.flags(fs)
		envFile := fs.String("env-file", "", envFileUsage)
		return func(inv invocation, args []string) error {
			if len(args) != 0 {
				return badUsage("intents check", "takes no arguments")
			}
			env, err := withEnvFile(inv.env, *envFile)
			if err != nil {
				return err
			}
			cfg, err := c.load(env)
			if err != nil {
				return err
			}
			cat, err := loadCatalog(cfg)
			if err != nil {
				return err
			}
			printIntents(inv.stdout, cat)
			fmt.Fprintln(inv.stdout)
			named := cat.Targets()
			failed, checked := probeTargets(inv.stdout, cfg, cat, env, func(name string) bool { return slices.Contains(named, name) })
			if failed > 0 {
				return fmt.Errorf("%w: %d of the %d targets the intents run at cannot serve them; fix what is named above", errCheckFailed, failed, checked)
			}
			return nil
		}
	},
}

// printIntents prints a line per definition.
func printIntents(w io.Writer, cat *intent.Catalog) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVERSION\tTARGET\tSCOPE\tMONEY\tSOURCE")
	for _, in := range cat.Definitions() {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", in.Name, in.Version, in.Target, in.Scope, yesNo(in.Money), in.Source)
	}
	for _, in := range cat.Processes() {
		steps := make([]string, len(in.Steps))
		for i, s := range in.Steps {
			steps[i] = s.Intent
		}
		fmt.Fprintf(tw, "%s\t%d\tprocess: %s\t%s\t%s\t%s\n", in.Name, in.Version, strings.Join(steps, " → "), strings.Join(in.StepScopes, "+"), yesNo(in.Money), in.Source)
	}
	tw.Flush()
}

// showIntent prints one definition as the gateway loaded it.
func showIntent(w io.Writer, in *intent.Intent) {
	fmt.Fprintf(w, "%s v%d — %s / %s\n", in.Name, in.Version, in.Title.RU, in.Title.EN)
	fmt.Fprintf(w, "  source:      %s (sha256 %s)\n", in.Source, in.Digest)
	fmt.Fprintf(w, "  target:      %s\n  scope:       %s\n  money:       %s\n  journaled:   %s\n", in.Target, in.Scope, yesNo(in.Money), yesNo(in.Journaled))
	fmt.Fprintf(w, "  description: %s\n", in.Description)
	fmt.Fprintln(w, "  labels:")
	for _, l := range in.Labels {
		fmt.Fprintf(w, "    %-20s %s / %s\n", l.Field, l.RU, l.EN)
	}
	if len(in.References) > 0 {
		fmt.Fprintln(w, "  references:")
		for _, f := range slices.Sorted(maps.Keys(in.References)) {
			fmt.Fprintf(w, "    %-20s %s\n", f, in.References[f])
		}
	}
	if l := in.Limits; l.CurrencyField != "" || l.AmountField != "" || l.ItemsField != "" {
		fmt.Fprintf(w, "  limits:      %+v\n", l)
	}
	if len(in.Map) > 0 {
		fmt.Fprintf(w, "  map:         %s\n", in.Map)
	}
	fmt.Fprintf(w, "  schema:      %s\n", in.Schema)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
