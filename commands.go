package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// invocation is what a command runs with: its streams and its environment.
type invocation struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	env            func(string) string
}

// A command is one of oncegate's commands, named as typed ("serve",
// "token create"). setup declares the command's flags on fs and returns
// its body, which gets the arguments left after the flags. A body checks
// its arguments before it opens anything, so a refused command line
// leaves nothing behind.
type command struct {
	name    string
	args    string // the synopsis after the name
	summary string
	setup   func(fs *flag.FlagSet) func(inv invocation, args []string) error
}

// errUsage marks a command line that was not understood.
var errUsage = errors.New("command line not understood")

// usageError is a refused command line; it names the help to read.
type usageError struct {
	cmd string // "" for the top level
	msg string
}

func (e usageError) Error() string {
	help := "oncegate help"
	if e.cmd != "" {
		help = "oncegate " + e.cmd + " -h"
	}
	if e.cmd == "" || strings.HasPrefix(e.msg, e.cmd) {
		return fmt.Sprintf("%s (see '%s')", e.msg, help)
	}
	return fmt.Sprintf("%s: %s (see '%s')", e.cmd, e.msg, help)
}

func (usageError) Is(target error) bool { return target == errUsage }

// badUsage is a usage error of the command cmd.
func badUsage(cmd, format string, a ...any) error {
	return usageError{cmd: cmd, msg: fmt.Sprintf(format, a...)}
}

// usage is the top-level help, made from the command list.
func usage() string {
	var b strings.Builder
	b.WriteString("oncegate — one business intent, one effect.\n\nUsage:\n")
	for _, c := range commands {
		line := strings.TrimSpace("  oncegate " + c.name + " " + c.args)
		if len(line) > 44 {
			fmt.Fprintf(&b, "  %s\n  %-44s %s\n", line, "", c.summary)
			continue
		}
		fmt.Fprintf(&b, "  %-44s %s\n", line, c.summary)
	}
	b.WriteString(`
The commands that use the journal (all but sim) also take --config FILE and
--data DIR. Flags may stand before or after a command's arguments; after "--"
everything is an argument. 'oncegate COMMAND -h' prints a command's flags.
With no configuration file, serve runs on the embedded defaults against
built-in simulators.
`)
	return b.String()
}

// find returns the command that args start with, and the rest of args.
// A group typed without its subcommand ("token") finds nothing and is
// named in the error.
func find(args []string) (command, []string, error) {
	for _, n := range []int{2, 1} {
		if len(args) < n {
			continue
		}
		name := strings.Join(args[:n], " ")
		for _, c := range commands {
			if c.name == name {
				return c, args[n:], nil
			}
		}
	}
	var subs []string
	for _, c := range commands {
		if group, sub, ok := strings.Cut(c.name, " "); ok && group == args[0] {
			subs = append(subs, sub)
		}
	}
	if len(subs) > 0 {
		if len(args) == 1 {
			return command{}, nil, badUsage("", "%s: say %s", args[0], strings.Join(subs, ", "))
		}
		return command{}, nil, badUsage("", "%s: unknown subcommand %q; say %s", args[0], args[1], strings.Join(subs, ", "))
	}
	return command{}, nil, badUsage("", "unknown command %q", args[0])
}

func (inv invocation) run(args []string) error {
	if len(args) == 0 {
		fmt.Fprint(inv.stderr, usage())
		return badUsage("", "say which command")
	}
	if len(args) == 2 && isHelp(args[1]) && !isCommand(args[0]) {
		if g := groupUsage(args[0]); g != "" {
			fmt.Fprint(inv.stdout, g)
			return nil
		}
	}
	switch args[0] {
	case "-version", "--version":
		if len(args) == 1 {
			args = []string{"version"} // the version command, as typed
		}
	case "help", "-h", "-help", "--help":
		if len(args) == 1 {
			fmt.Fprint(inv.stdout, usage())
			return nil
		}
		c, _, err := find(args[1:])
		if err != nil {
			return err
		}
		fs, _ := c.flagSet()
		c.printUsage(inv.stdout, fs)
		return nil
	}
	c, args, err := find(args)
	if err != nil {
		return err
	}
	fs, body := c.flagSet()
	if err := parse(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			c.printUsage(inv.stdout, fs)
			return nil
		}
		return badUsage(c.name, "%v", err)
	}
	return body(inv, fs.Args())
}

// isCommand reports whether name is a command of its own (service is,
// besides the group of its subcommands).
func isCommand(name string) bool {
	return slices.ContainsFunc(commands, func(c command) bool { return c.name == name })
}

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help" || arg == "help"
}

// groupUsage is the usage of a group of commands (token, user, audit,
// intents, service): each subcommand with its summary; "" when name is
// no group.
func groupUsage(name string) string {
	var b strings.Builder
	for _, c := range commands {
		if group, _, ok := strings.Cut(c.name, " "); ok && group == name {
			if b.Len() == 0 {
				fmt.Fprintf(&b, "Usage: oncegate %s SUBCOMMAND …\n\n", name)
			}
			fmt.Fprintf(&b, "  %-44s %s\n", strings.TrimSpace(c.name+" "+c.args), c.summary)
		}
	}
	if b.Len() == 0 {
		return ""
	}
	fmt.Fprintf(&b, "\n'oncegate %s SUBCOMMAND -h' prints a subcommand's flags.\n", name)
	return b.String()
}

// flagSet makes the command's flags and its body.
func (c command) flagSet() (*flag.FlagSet, func(inv invocation, args []string) error) {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs, c.setup(fs)
}

func (c command) printUsage(w io.Writer, fs *flag.FlagSet) {
	synopsis := c.name
	if fs.Lookup("config") != nil {
		synopsis += " [--config FILE] [--data DIR]"
	}
	synopsis = strings.TrimSpace(synopsis + " " + c.args)
	fmt.Fprintf(w, "Usage: oncegate %s\n\n%s.\n", synopsis, strings.ToUpper(c.summary[:1])+c.summary[1:])
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprint(w, "\nFlags:\n")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
}

// parse parses flags wherever they stand, before or after the command's
// own arguments (`migrate up --data d` as well as `migrate --data d up`);
// fs.Args() is then the arguments in their order. After "--" everything
// is an argument, a name starting with "-" included.
func parse(fs *flag.FlagSet, args []string) error {
	var positional, rest []string
	if i := slices.Index(args, "--"); i >= 0 {
		args, rest = args[:i], args[i+1:]
	}
	for {
		if err := fs.Parse(args); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	return fs.Parse(append(append([]string{"--"}, positional...), rest...))
}
