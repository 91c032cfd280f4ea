package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// The service commands install oncegate as a service of the operating
// system and control it, through the seam in service.go: a systemd unit
// on Linux (service_systemd.go), a Windows service on Windows
// (service_windows.go).

// serviceOptions are service install's flags.
type serviceOptions struct {
	config, data, envFile string
	name, user, unitDir   string
	noEnable, force       bool
	set                   map[string]bool // the flags the command line gave
}

var serviceName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// checkServiceName refuses a name that is not a plain unit or service
// name ("oncegate", "oncegate-test").
func checkServiceName(cmd, name string) error {
	if !serviceName.MatchString(name) || strings.HasSuffix(name, ".service") {
		return badUsage(cmd, "--name %q: letters, digits, '.', '_' and '-' only, without .service", name)
	}
	return nil
}

// installSpec checks the options and builds the spec: the configuration
// file must exist and load (with the env file over the environment, as
// the service will see it) before anything is written. exe is the binary
// the service runs.
func (o serviceOptions) installSpec(env func(string) string, exe string) (serviceSpec, error) {
	const cmd = "service install"
	if o.config == "" {
		return serviceSpec{}, badUsage(cmd, "--config is required: a service runs with a configuration file")
	}
	if err := checkServiceName(cmd, o.name); err != nil {
		return serviceSpec{}, err
	}
	spec := serviceSpec{Name: o.name, Exe: exe, NoEnable: o.noEnable, Force: o.force}
	if o.set["user"] {
		spec.User = o.user
	}
	var err error
	if spec.Config, err = existingFile("--config", o.config); err != nil {
		return serviceSpec{}, err
	}
	if o.envFile != "" {
		if spec.EnvFile, err = existingFile("--env-file", o.envFile); err != nil {
			return serviceSpec{}, err
		}
	}
	env, err = withEnvFile(env, spec.EnvFile)
	if err != nil {
		return serviceSpec{}, fmt.Errorf("service install: %w; nothing was installed", err)
	}
	cfg, err := configFlags{config: spec.Config, data: o.data}.load(env)
	if err != nil {
		return serviceSpec{}, fmt.Errorf("service install: the configuration %s does not load: %w; nothing was installed", spec.Config, err)
	}
	// A service starts in a directory of the system's choosing, so a
	// relative data_dir would land there.
	switch {
	case o.data != "":
		spec.Data, err = filepath.Abs(o.data)
		if err != nil {
			return serviceSpec{}, fmt.Errorf("service install: --data: %w", err)
		}
	case filepath.IsAbs(cfg.DataDir):
		spec.Data = filepath.Clean(cfg.DataDir)
	default:
		return serviceSpec{}, badUsage(cmd, "the configuration's data_dir %q is relative: say --data DIR (an absolute directory for the journal)", cfg.DataDir)
	}
	spec.Listen = cfg.Listen
	for _, p := range []string{spec.Exe, spec.Config, spec.Data, spec.EnvFile} {
		if strings.IndexFunc(p, unicode.IsControl) >= 0 {
			return serviceSpec{}, fmt.Errorf("service install: the path %q holds a control character", p)
		}
	}
	return spec, nil
}

// existingFile is path made absolute, once it is known to be a file.
func existingFile(flagName, path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("service install: %s: %w", flagName, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("service install: %s: %w; nothing was installed", flagName, err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("service install: %s: %s is not a file; nothing was installed", flagName, abs)
	}
	return abs, nil
}

// executable is this binary's path with symlinks resolved, which is what
// the service runs.
func executable() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("service install: this binary's path: %w", err)
	}
	return filepath.EvalSymlinks(exe)
}

// serviceInstall builds the spec and installs it with m.
func serviceInstall(inv invocation, o serviceOptions, exe string, m serviceManager) error {
	spec, err := o.installSpec(inv.env, exe)
	if err != nil {
		return err
	}
	return m.install(inv, spec)
}

var serviceCommand = command{
	name:    "service",
	args:    "install|uninstall|start|stop|status",
	summary: "install oncegate as a systemd unit (Linux) or a Windows service, and control it; 'oncegate service install -h' for its flags",
	setup: func(fs *flag.FlagSet) func(invocation, []string) error {
		return func(inv invocation, args []string) error {
			if len(args) == 0 {
				return badUsage("", "service: say install, uninstall, start, stop or status")
			}
			return badUsage("", "service: unknown subcommand %q; say install, uninstall, start, stop or status", args[0])
		}
	},
}

var serviceInstallCommand = command{
	name:    "service install",
	args:    "[--env-file FILE] [--name NAME] [--user USER] [--unit-dir DIR] [--no-enable] [--force]",
	summary: "install and start serve as a service: a hardened systemd unit on Linux, a Windows service on Windows (needs root or an administrator)",
	setup: func(fs *flag.FlagSet) func(invocation, []string) error {
		o := serviceOptions{set: map[string]bool{}}
		fs.StringVar(&o.config, "config", "", "configuration `FILE` the service runs with (required; must load)")
		fs.StringVar(&o.data, "data", "", "the journal's data `DIR` (default: the configuration's data_dir, if absolute); under /var/lib, systemd makes it (StateDirectory=) and runs the service as a dynamic user")
		fs.StringVar(&o.envFile, "env-file", "", "`FILE` of KEY=VALUE lines (the targets' secrets) the service reads over its environment; only its path is written")
		fs.StringVar(&o.name, "name", defaultServiceName, "the service's `NAME`")
		fs.StringVar(&o.user, "user", "oncegate", "Linux: the existing `USER` to run as when the data directory is outside /var/lib, or when given")
		fs.StringVar(&o.unitDir, "unit-dir", "/etc/systemd/system", "Linux: the `DIR` the unit file is written to")
		fs.BoolVar(&o.noEnable, "no-enable", false, "install only: do not enable or start the service")
		fs.BoolVar(&o.force, "force", false, "replace an installed service of the same name")
		return func(inv invocation, args []string) error {
			if len(args) != 0 {
				return badUsage("service install", "takes no arguments")
			}
			fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
			m, err := platformServiceManager(o.unitDir)
			if err != nil {
				return err
			}
			exe, err := executable()
			if err != nil {
				return err
			}
			return serviceInstall(inv, o, exe, m)
		}
	},
}

var serviceUninstallCommand = command{
	name:    "service uninstall",
	args:    "[--name NAME] [--unit-dir DIR]",
	summary: "stop and remove the service; the data directory and its journal stay",
	setup: func(fs *flag.FlagSet) func(invocation, []string) error {
		name := fs.String("name", defaultServiceName, "the service's `NAME`")
		unitDir := fs.String("unit-dir", "/etc/systemd/system", "Linux: the `DIR` the unit file is in")
		return func(inv invocation, args []string) error {
			if len(args) != 0 {
				return badUsage("service uninstall", "takes no arguments")
			}
			if err := checkServiceName("service uninstall", *name); err != nil {
				return err
			}
			m, err := platformServiceManager(*unitDir)
			if err != nil {
				return err
			}
			return m.uninstall(inv, *name)
		}
	},
}

// serviceControlCommand is service start, stop or status.
func serviceControlCommand(action, summary string) command {
	cmd := "service " + action
	return command{
		name:    cmd,
		args:    "[--name NAME]",
		summary: summary,
		setup: func(fs *flag.FlagSet) func(invocation, []string) error {
			name := fs.String("name", defaultServiceName, "the service's `NAME`")
			return func(inv invocation, args []string) error {
				if len(args) != 0 {
					return badUsage(cmd, "takes no arguments")
				}
				if err := checkServiceName(cmd, *name); err != nil {
					return err
				}
				m, err := platformServiceManager("/etc/systemd/system")
				if err != nil {
					return err
				}
				return m.control(inv, *name, action)
			}
		},
	}
}

var (
	serviceStartCommand  = serviceControlCommand("start", "start the installed service")
	serviceStopCommand   = serviceControlCommand("stop", "stop the service (operations in flight finish first)")
	serviceStatusCommand = serviceControlCommand("status", "show whether the service runs (exit 1 if it does not)")
)
