package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
)

// systemd installs oncegate as a systemd unit and controls it through
// systemctl. run runs systemctl with the given arguments (tests record
// the calls instead); hidden is the directories the unit's sandbox hides
// from the service, which install refuses to put the binary, the
// configuration or the journal in.
type systemd struct {
	unitDir string
	run     func(inv invocation, args ...string) error
	hidden  []string
}

// hiddenFromService is what ProtectHome=yes and PrivateTmp=yes hide from
// the service, or replace with an empty directory of its own.
var hiddenFromService = []string{"/home", "/root", "/run/user", "/tmp", "/var/tmp"}

// newSystemd is the systemd manager writing units to unitDir.
func newSystemd(unitDir string) systemd {
	return systemd{unitDir: unitDir, run: systemctl, hidden: hiddenFromService}
}

// systemctl runs systemctl with its output on the command's.
func systemctl(inv invocation, args ...string) error {
	cmd := exec.Command("systemctl", args...)
	cmd.Stdout, cmd.Stderr = inv.stdout, inv.stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("systemctl %s: %w", strings.Join(args, " "), err)
	}
	return nil
}

// stopTimeoutSec, the unit's TimeoutStopSec (and the Windows service's
// stop wait hint), is how long systemd waits after SIGTERM before it kills
// serve. Serve stops accepting, then waits for the drives in flight, each
// bounded by its target's budget: at the default timeouts a Bitrix24
// drive may page through 20 look-up calls of 5 s, then make 4 attempts of
// 5 s with the retry delays between them, about 125 s, and its lease adds
// 10 s for the journal writes. 150 s lets such a drive finish; a drive
// cut short by a kill stays started under its lease and the next run
// reconciles it, so a longer timeout configuration is safe, only slower
// to settle.
const stopTimeoutSec = 150

// unitOptions is what the unit says beyond the spec.
type unitOptions struct {
	serviceSpec
	// StateDir is the data directory relative to /var/lib when it is
	// under it (systemd makes it: StateDirectory=), else "".
	StateDir string
	// Dynamic runs the service as a transient user (DynamicUser=yes),
	// which needs the data under /var/lib.
	Dynamic bool
}

// unitFor decides how spec runs under systemd: with its data under
// /var/lib and no --user, as a dynamic user with systemd owning the state
// directory; otherwise as the user named (default "oncegate"), allowed to
// write the data directory only.
func unitFor(spec serviceSpec) unitOptions {
	u := unitOptions{serviceSpec: spec}
	if rel, err := filepath.Rel("/var/lib", spec.Data); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
		u.StateDir = rel
	}
	u.Dynamic = u.StateDir != "" && spec.User == ""
	if !u.Dynamic && u.User == "" {
		u.User = defaultServiceName
	}
	return u
}

// systemdUnit is the unit file text of u.
func systemdUnit(u unitOptions) string {
	var b strings.Builder
	line := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	line("# Written by 'oncegate service install'; 'oncegate service uninstall' removes it.")
	line("[Unit]")
	line("Description=oncegate gateway (one business intent, one effect)")
	line("After=network-online.target")
	line("Wants=network-online.target")
	line("")
	line("[Service]")
	line("Type=notify")
	line("NotifyAccess=main")
	exec := []string{systemdExecArg(u.Exe)}
	for _, a := range u.serveArgs(false) {
		exec = append(exec, systemdExecArg(a))
	}
	line("ExecStart=%s", strings.Join(exec, " "))
	if u.EnvFile != "" {
		// Read by systemd as root, so the file stays 0600; only its path
		// is here. serve is not told of it again.
		line("EnvironmentFile=-%s", systemdSpecifiers(u.EnvFile))
	}
	line("Restart=on-failure")
	line("RestartSec=5")
	line("KillSignal=SIGTERM")
	line("# serve waits for the operations in flight: at the default timeouts a")
	line("# Bitrix24 drive may take about 135 s; one cut short is reconciled at the next start.")
	line("TimeoutStopSec=%ds", stopTimeoutSec)
	line("LimitNOFILE=65536")
	if u.Dynamic {
		line("DynamicUser=yes")
	} else {
		line("User=%s", u.User)
	}
	if u.StateDir != "" {
		line("StateDirectory=%s", systemdPathArg(u.StateDir))
		line("StateDirectoryMode=0700")
	} else {
		line("ReadWritePaths=%s", systemdPathArg(u.Data))
	}
	line("UMask=0077")
	line("ProtectSystem=strict")
	line("ProtectHome=yes")
	line("PrivateTmp=yes")
	line("PrivateDevices=yes")
	line("NoNewPrivileges=yes")
	line("ProtectKernelTunables=yes")
	line("ProtectKernelModules=yes")
	line("ProtectKernelLogs=yes")
	line("ProtectControlGroups=yes")
	line("ProtectClock=yes")
	line("ProtectHostname=yes")
	line("RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6")
	line("RestrictNamespaces=yes")
	line("RestrictRealtime=yes")
	line("RestrictSUIDSGID=yes")
	line("LockPersonality=yes")
	line("MemoryDenyWriteExecute=yes")
	line("SystemCallArchitectures=native")
	if p := listenPort(u.Listen); p > 0 && p < 1024 {
		line("AmbientCapabilities=CAP_NET_BIND_SERVICE")
		line("CapabilityBoundingSet=CAP_NET_BIND_SERVICE")
	} else {
		line("CapabilityBoundingSet=")
	}
	line("")
	line("[Install]")
	line("WantedBy=multi-user.target")
	return b.String()
}

// systemdSpecifiers escapes systemd's specifiers: "%" is "%%".
func systemdSpecifiers(s string) string { return strings.ReplaceAll(s, "%", "%%") }

// systemdPathArg is a path as one word of a space-separated list of paths
// (ReadWritePaths=, StateDirectory=): quoted when it holds a space.
func systemdPathArg(s string) string {
	s = systemdSpecifiers(s)
	if !strings.ContainsAny(s, " \t\"'\\") {
		return s
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// systemdExecArg is one word of ExecStart=: specifiers and "$" (variable
// expansion) escaped, quoted with C escapes when it holds a space, a quote,
// a backslash or ";".
func systemdExecArg(s string) string {
	s = strings.ReplaceAll(systemdSpecifiers(s), "$", "$$")
	if s != "" && !strings.ContainsAny(s, " \t\"'\\;") {
		return s
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// under reports whether path is dir or inside it.
func under(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

func (s systemd) unitPath(name string) string { return filepath.Join(s.unitDir, name+".service") }

// install writes the unit, reloads systemd, and enables and starts it.
func (s systemd) install(inv invocation, spec serviceSpec) error {
	// Step 1: refuse what the sandbox would hide from the service.
	for _, p := range []struct{ what, path string }{{"the oncegate binary", spec.Exe}, {"the configuration", spec.Config}, {"the data directory", spec.Data}} {
		for _, dir := range s.hidden {
			if under(p.path, dir) {
				return fmt.Errorf("service install: %s %s is under %s, which the service's sandbox (ProtectHome=, PrivateTmp=) hides: put it elsewhere (the binary in /usr/local/bin, the configuration in /etc/oncegate, the data in /var/lib/oncegate); nothing was installed", p.what, p.path, dir)
			}
		}
	}
	unit := s.unitPath(spec.Name)
	_, err := os.Stat(unit)
	replaced := err == nil
	if replaced && !spec.Force {
		return fmt.Errorf("service install: %s exists: 'oncegate service uninstall --name %s' first, or say --force to replace it; nothing was changed", unit, spec.Name)
	}
	u := unitFor(spec)

	// Step 2: a service user's data directory is made for it; systemd
	// makes a state directory itself.
	if u.Dynamic {
		if fi, err := os.Stat(spec.Config); err == nil && fi.Mode().Perm()&0o004 == 0 {
			fmt.Fprintf(inv.stderr, "warning: %s is not readable by others, and the service's dynamic user cannot read it: chmod 0644 it (secrets belong in the env file, which systemd reads as root)\n", spec.Config)
		}
	}
	if !u.Dynamic && u.StateDir == "" {
		acct, err := user.Lookup(u.User)
		if err != nil {
			return fmt.Errorf("service install: user %q: %w: make it (useradd --system --no-create-home --shell /usr/sbin/nologin %s), say --user, or put the data under /var/lib; nothing was installed", u.User, err, u.User)
		}
		uid, _ := strconv.Atoi(acct.Uid)
		gid, _ := strconv.Atoi(acct.Gid)
		if err := os.MkdirAll(spec.Data, 0o700); err != nil {
			return fmt.Errorf("service install: data directory: %w", err)
		}
		if err := os.Chown(spec.Data, uid, gid); err != nil {
			return fmt.Errorf("service install: data directory: %w", err)
		}
	}

	// Step 3: write the unit in place whole, then tell systemd.
	if err := writeFileAtomic(unit, []byte(systemdUnit(u)), 0o644); err != nil {
		return fmt.Errorf("service install: %w", err)
	}
	fmt.Fprintf(inv.stdout, "wrote %s\n", unit)
	if err := s.run(inv, "daemon-reload"); err != nil {
		return err
	}
	switch {
	case spec.NoEnable:
		fmt.Fprintf(inv.stdout, "installed %s, not enabled; start it with 'oncegate service start --name %s'\n", spec.Name, spec.Name)
		return nil
	case replaced:
		if err := s.run(inv, "enable", spec.Name); err != nil {
			return err
		}
		if err := s.run(inv, "restart", spec.Name); err != nil {
			return err
		}
	default:
		if err := s.run(inv, "enable", "--now", spec.Name); err != nil {
			return err
		}
	}
	fmt.Fprintf(inv.stdout, "%s is enabled and started; its log: journalctl -u %s\n", spec.Name, spec.Name)
	return nil
}

// uninstall disables and stops the unit, removes its file and reloads
// systemd. The data directory stays.
func (s systemd) uninstall(inv invocation, name string) error {
	unit := s.unitPath(name)
	if _, err := os.Stat(unit); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("service uninstall: no unit %s: nothing to remove", unit)
	}
	if err := s.run(inv, "disable", "--now", name); err != nil {
		return err
	}
	if err := os.Remove(unit); err != nil {
		return fmt.Errorf("service uninstall: %w", err)
	}
	if err := s.run(inv, "daemon-reload"); err != nil {
		return err
	}
	fmt.Fprintf(inv.stdout, "removed %s; the data directory and its journal are left as they were\n", unit)
	return nil
}

// control is systemctl start, stop or status.
func (s systemd) control(inv invocation, name, action string) error {
	return s.run(inv, action, name)
}

// writeFileAtomic writes data to path through a temporary file beside it,
// so a reader sees the old file or the new one whole.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
