package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/server/config/configtest"
)

// fakeSystemctl records the systemctl calls of a systemd manager.
type fakeSystemctl struct{ calls [][]string }

func (f *fakeSystemctl) manager(unitDir string) systemd {
	return systemd{unitDir: unitDir, run: func(_ invocation, args ...string) error {
		f.calls = append(f.calls, args)
		return nil
	}}
}

func testCLI() (invocation, *bytes.Buffer) {
	var out bytes.Buffer
	return invocation{strings.NewReader(""), &out, &out, configtest.NoEnv}, &out
}

const secretValue = "s3cr3t-webhook-value"

func unitLines(unit string) map[string]bool {
	lines := map[string]bool{}
	for _, l := range strings.Split(unit, "\n") {
		lines[l] = true
	}
	return lines
}

func TestSystemdUnit(t *testing.T) {
	t.Parallel()
	t.Run("DynamicUser", func(t *testing.T) {
		u := unitFor(serviceSpec{Name: "oncegate", Exe: "/usr/local/bin/oncegate", Config: "/etc/oncegate/config.yaml",
			Data: "/var/lib/oncegate", EnvFile: "/etc/oncegate/secrets.env", Listen: "127.0.0.1:8080"})
		unit := systemdUnit(u)
		lines := unitLines(unit)
		for _, want := range []string{
			"Type=notify",
			"ExecStart=/usr/local/bin/oncegate serve --config /etc/oncegate/config.yaml --data /var/lib/oncegate",
			"EnvironmentFile=-/etc/oncegate/secrets.env",
			"Restart=on-failure",
			"RestartSec=5",
			"KillSignal=SIGTERM",
			"TimeoutStopSec=150s",
			"LimitNOFILE=65536",
			"DynamicUser=yes",
			"StateDirectory=oncegate",
			"ProtectSystem=strict",
			"ProtectHome=yes",
			"PrivateTmp=yes",
			"NoNewPrivileges=yes",
			"CapabilityBoundingSet=",
			"WantedBy=multi-user.target",
		} {
			if !lines[want] {
				t.Errorf("unit lacks the line %q:\n%s", want, unit)
			}
		}
		for _, not := range []string{"User=", "ReadWritePaths=", "--env-file", "AmbientCapabilities="} {
			if strings.Contains(unit, "\n"+not) || strings.Contains(unit, " "+not) {
				t.Errorf("unit has %q:\n%s", not, unit)
			}
		}
	})
	t.Run("UserOutsideVarLib", func(t *testing.T) {
		unit := systemdUnit(unitFor(serviceSpec{Name: "oncegate", Exe: "/usr/local/bin/oncegate", Config: "/etc/oncegate/config.yaml", Data: "/srv/oncegate"}))
		lines := unitLines(unit)
		for _, want := range []string{"User=oncegate", "ReadWritePaths=/srv/oncegate", "ProtectSystem=strict"} {
			if !lines[want] {
				t.Errorf("unit lacks the line %q:\n%s", want, unit)
			}
		}
		if strings.Contains(unit, "DynamicUser") || strings.Contains(unit, "StateDirectory") || strings.Contains(unit, "EnvironmentFile") {
			t.Errorf("unit for data outside /var/lib:\n%s", unit)
		}
	})
	t.Run("UserGivenUnderVarLib", func(t *testing.T) {
		unit := systemdUnit(unitFor(serviceSpec{Name: "og", Exe: "/usr/local/bin/oncegate", Config: "/etc/og.yaml", Data: "/var/lib/og/data", User: "svc-og"}))
		lines := unitLines(unit)
		if !lines["User=svc-og"] || !lines["StateDirectory=og/data"] || strings.Contains(unit, "DynamicUser") {
			t.Errorf("unit with --user and data under /var/lib:\n%s", unit)
		}
	})
	t.Run("Quoting", func(t *testing.T) {
		unit := systemdUnit(unitFor(serviceSpec{Name: "oncegate", Exe: "/opt/one gate/oncegate", Config: `/etc/one gate/100%"cfg".yaml`,
			Data: "/srv/data $HOME", EnvFile: "/etc/one gate/secrets%.env"}))
		lines := unitLines(unit)
		for _, want := range []string{
			`ExecStart="/opt/one gate/oncegate" serve --config "/etc/one gate/100%%\"cfg\".yaml" --data "/srv/data $$HOME"`,
			`ReadWritePaths="/srv/data $HOME"`,
			`EnvironmentFile=-/etc/one gate/secrets%%.env`,
		} {
			if !lines[want] {
				t.Errorf("unit lacks the line %q:\n%s", want, unit)
			}
		}
	})
	t.Run("LowPort", func(t *testing.T) {
		unit := systemdUnit(unitFor(serviceSpec{Name: "oncegate", Exe: "/usr/local/bin/oncegate", Config: "/etc/c.yaml", Data: "/var/lib/oncegate", Listen: "0.0.0.0:443"}))
		lines := unitLines(unit)
		if !lines["AmbientCapabilities=CAP_NET_BIND_SERVICE"] || !lines["CapabilityBoundingSet=CAP_NET_BIND_SERVICE"] {
			t.Errorf("unit listening on 443 cannot bind it:\n%s", unit)
		}
	})
}

// The generated unit passes systemd's own check, with ExecStart at a real
// binary whose path needs quoting (a wrong quote would name a file that
// does not exist). CI installs systemd, so there it always runs.
func TestSystemdAnalyzeVerify(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("systemd is Linux's")
	}
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("systemd-analyze is missing in CI: install systemd")
		}
		t.Skip("systemd-analyze is not installed")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "one gate")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "oncegate 100%")
	if err := os.Symlink(self, exe); err != nil {
		t.Fatal(err)
	}
	for name, spec := range map[string]serviceSpec{
		"oncegate": {Exe: exe, Config: "/etc/oncegate/config.yaml", Data: "/var/lib/oncegate", EnvFile: "/etc/oncegate/secrets.env", Listen: "127.0.0.1:8080"},
		"og-user":  {Exe: exe, Config: "/etc/one gate/config.yaml", Data: "/srv/one gate", User: "oncegate", Listen: ":443"},
		"og-state": {Exe: exe, Config: "/etc/oncegate/config.yaml", Data: "/var/lib/one gate/data", EnvFile: "/etc/one gate/secrets%.env"},
	} {
		spec.Name = name
		unit := filepath.Join(t.TempDir(), name+".service")
		if err := os.WriteFile(unit, []byte(systemdUnit(unitFor(spec))), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(analyze, "verify", "--man=no", unit).CombinedOutput()
		// Warnings ("Unknown key …, ignoring") do not fail verify; any line
		// about our unit does fail the test.
		if err != nil || strings.Contains(string(out), name+".service") {
			t.Errorf("systemd-analyze verify %s: %v\n%s\n%s", name, err, out, systemdUnit(unitFor(spec)))
		}
	}
}

func TestServiceInstall(t *testing.T) {
	t.Parallel()
	const exe = "/usr/local/bin/oncegate"
	confDir := t.TempDir()
	config := configtest.WriteFile(t, confDir, "config.yaml", "contour: test\n", 0o644)
	envFile := configtest.WriteFile(t, confDir, "secrets.env", "BITRIX24_WEBHOOK_URL="+secretValue+"\n", 0o644)
	opts := func(unitDir string) serviceOptions {
		return serviceOptions{config: config, data: "/var/lib/oncegate-test", envFile: envFile, name: "oncegate-test", user: "oncegate", unitDir: unitDir, set: map[string]bool{}}
	}

	t.Run("OK", func(t *testing.T) {
		unitDir := t.TempDir()
		var f fakeSystemctl
		inv, out := testCLI()
		if err := serviceInstall(inv, opts(unitDir), exe, f.manager(unitDir)); err != nil {
			t.Fatal(err)
		}
		if got, want := f.calls, [][]string{{"daemon-reload"}, {"enable", "--now", "oncegate-test"}}; !reflect.DeepEqual(got, want) {
			t.Fatalf("systemctl calls %q, want %q", got, want)
		}
		path := filepath.Join(unitDir, "oncegate-test.service")
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := fi.Mode().Perm(), os.FileMode(0o644); got != want {
			t.Fatalf("unit mode %v, want %v", got, want)
		}
		data, _ := os.ReadFile(path)
		unit := string(data)
		if !strings.Contains(unit, "\nExecStart="+exe+" serve --config "+config+" --data /var/lib/oncegate-test\n") {
			t.Fatalf("ExecStart in the unit:\n%s", unit)
		}
		if !strings.Contains(unit, "\nEnvironmentFile=-"+envFile+"\n") {
			t.Fatalf("EnvironmentFile in the unit:\n%s", unit)
		}
		if strings.Contains(unit, secretValue) || strings.Contains(out.String(), secretValue) {
			t.Fatalf("a secret of the env file is in the unit or the output:\n%s\n%s", unit, out)
		}
		if entries, _ := os.ReadDir(unitDir); len(entries) != 1 {
			t.Fatalf("unit directory holds %d files, want the unit alone", len(entries))
		}
	})
	t.Run("RelativePathsMadeAbsolute", func(t *testing.T) {
		unitDir := t.TempDir()
		var f fakeSystemctl
		inv, _ := testCLI()
		o := opts(unitDir)
		wd, _ := os.Getwd()
		rel, err := filepath.Rel(wd, config)
		if err != nil {
			t.Skip(err)
		}
		o.config = rel
		if err := serviceInstall(inv, o, exe, f.manager(unitDir)); err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(filepath.Join(unitDir, "oncegate-test.service"))
		if !strings.Contains(string(data), " --config "+config+" ") {
			t.Fatalf("the relative --config %s is not made absolute:\n%s", rel, data)
		}
	})
	t.Run("NoEnable", func(t *testing.T) {
		unitDir := t.TempDir()
		var f fakeSystemctl
		inv, _ := testCLI()
		o := opts(unitDir)
		o.noEnable = true
		if err := serviceInstall(inv, o, exe, f.manager(unitDir)); err != nil {
			t.Fatal(err)
		}
		if got, want := f.calls, [][]string{{"daemon-reload"}}; !reflect.DeepEqual(got, want) {
			t.Fatalf("systemctl calls %q, want %q", got, want)
		}
	})
	t.Run("ErrExists", func(t *testing.T) {
		unitDir := t.TempDir()
		path := filepath.Join(unitDir, "oncegate-test.service")
		os.WriteFile(path, []byte("# theirs\n"), 0o644)
		var f fakeSystemctl
		inv, _ := testCLI()
		err := serviceInstall(inv, opts(unitDir), exe, f.manager(unitDir))
		if err == nil || !strings.Contains(err.Error(), "--force") {
			t.Fatalf("install over an existing unit: %v, want a refusal naming --force", err)
		}
		if data, _ := os.ReadFile(path); string(data) != "# theirs\n" || len(f.calls) != 0 {
			t.Fatalf("a refused install changed the unit (%q) or called systemctl %q", data, f.calls)
		}
		o := opts(unitDir)
		o.force = true
		if err := serviceInstall(inv, o, exe, f.manager(unitDir)); err != nil {
			t.Fatal(err)
		}
		if data, _ := os.ReadFile(path); !strings.Contains(string(data), "Type=notify") {
			t.Fatalf("--force did not replace the unit:\n%s", data)
		}
		if got, want := f.calls, [][]string{{"daemon-reload"}, {"enable", "oncegate-test"}, {"restart", "oncegate-test"}}; !reflect.DeepEqual(got, want) {
			t.Fatalf("systemctl calls %q, want %q", got, want)
		}
	})
	t.Run("ErrRefused", func(t *testing.T) {
		bad := configtest.WriteFile(t, t.TempDir(), "bad.yaml", "lisen: 127.0.0.1:8080\n", 0o644)
		for name, c := range map[string]struct {
			edit   func(*serviceOptions)
			exe    string
			msg    string
			hidden []string
		}{
			"NoConfig":       {func(o *serviceOptions) { o.config = "" }, exe, "--config is required", nil},
			"MissingConfig":  {func(o *serviceOptions) { o.config = filepath.Join(confDir, "nope.yaml") }, exe, "no such file", nil},
			"ConfigNotLoad":  {func(o *serviceOptions) { o.config = bad }, exe, "does not load", nil},
			"MissingEnvFile": {func(o *serviceOptions) { o.envFile = filepath.Join(confDir, "nope.env") }, exe, "--env-file", nil},
			"RelativeData":   {func(o *serviceOptions) { o.data = "" }, exe, "data_dir \"./oncegate-data\" is relative", nil},
			"BadName":        {func(o *serviceOptions) { o.name = "../etc/x" }, exe, "--name", nil},
			"DataInHome":     {func(o *serviceOptions) { o.data = "/home/me/og" }, exe, "is under /home", []string{"/home"}},
			"DataInTmp":      {func(o *serviceOptions) { o.data = "/var/tmp/og" }, exe, "is under /var/tmp", []string{"/var/tmp"}},
			"BinaryInHome":   {func(o *serviceOptions) {}, "/root/go/bin/oncegate", "is under /root", []string{"/root"}},
			"NoSuchUser": {func(o *serviceOptions) {
				o.data = "/srv/og-test-never"
				o.user = "no-such-user-og"
				o.set["user"] = true
			}, exe, `user "no-such-user-og"`, nil},
		} {
			t.Run(name, func(t *testing.T) {
				unitDir := t.TempDir()
				var f fakeSystemctl
				m := f.manager(unitDir)
				m.hidden = c.hidden // the configuration is in a temporary directory
				o := opts(unitDir)
				c.edit(&o)
				inv, _ := testCLI()
				err := serviceInstall(inv, o, c.exe, m)
				if err == nil || !strings.Contains(err.Error(), c.msg) {
					t.Fatalf("%v, want a refusal saying %q", err, c.msg)
				}
				if entries, _ := os.ReadDir(unitDir); len(entries) != 0 || len(f.calls) != 0 {
					t.Fatalf("a refused install wrote %d files or called systemctl %q", len(entries), f.calls)
				}
			})
		}
		if _, err := os.Stat("/srv/og-test-never"); err == nil {
			t.Fatal("a refused install made the data directory")
		}
	})
}

func TestServiceUninstall(t *testing.T) {
	t.Parallel()
	unitDir := t.TempDir()
	path := filepath.Join(unitDir, "oncegate.service")
	os.WriteFile(path, []byte("[Service]\n"), 0o644)
	var f fakeSystemctl
	inv, out := testCLI()
	if err := f.manager(unitDir).uninstall(inv, "oncegate"); err != nil {
		t.Fatal(err)
	}
	if got, want := f.calls, [][]string{{"disable", "--now", "oncegate"}, {"daemon-reload"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("systemctl calls %q, want %q", got, want)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the unit file is still there: %v", err)
	}
	if !strings.Contains(out.String(), "data directory and its journal are left") {
		t.Fatalf("uninstall does not say the data stays: %q", out)
	}
	if err := f.manager(unitDir).uninstall(inv, "oncegate"); err == nil || !strings.Contains(err.Error(), "nothing to remove") {
		t.Fatalf("uninstall of no unit: %v", err)
	}
	for _, action := range []string{"start", "stop", "status"} {
		f.calls = nil
		if err := f.manager(unitDir).control(inv, "oncegate", action); err != nil {
			t.Fatal(err)
		}
		if got, want := f.calls, [][]string{{action, "oncegate"}}; !reflect.DeepEqual(got, want) {
			t.Fatalf("service %s: systemctl calls %q, want %q", action, got, want)
		}
	}
}

// The command lines: help exits 0, and a refused line is refused before
// systemctl runs or a file is written.
func TestServiceCommandLine(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"service", "-h"}, {"service", "--help"}, {"help", "service"}} {
		out, err := runCmd(args...)
		if err != nil || !strings.HasPrefix(out, "Usage: oncegate service install|uninstall|start|stop|status") {
			t.Errorf("%v: %v\n%s", args, err, out)
		}
	}
	out, err := runCmd("service", "install", "-h")
	if err != nil || !strings.Contains(out, "-config FILE") || !strings.Contains(out, "-no-enable") || !strings.Contains(out, "-env-file FILE") {
		t.Fatalf("service install -h: %v\n%s", err, out)
	}
	if out, err := runCmd("help"); err != nil || !strings.Contains(out, "oncegate service install") {
		t.Fatalf("help does not list service install: %v\n%s", err, out)
	}
	if runtime.GOOS != "linux" {
		return
	}
	unitDir := t.TempDir()
	bad := configtest.WriteFile(t, t.TempDir(), "bad.yaml", "listen: [\n", 0o644)
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"service"}, "say install, uninstall, start, stop or status"},
		{[]string{"service", "restart"}, `unknown subcommand "restart"`},
		{[]string{"service", "install", "--unit-dir", unitDir}, "--config is required"},
		{[]string{"service", "install", "--unit-dir", unitDir, "--config", bad, "--data", "/var/lib/og-test"}, "does not load"},
		{[]string{"service", "install", "--unit-dir", unitDir, "extra"}, "takes no arguments"},
		{[]string{"service", "uninstall", "--name", "a/b"}, "--name"},
		{[]string{"service", "status", "extra"}, "takes no arguments"},
	} {
		if _, err := runCmd(c.args...); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%v: %v, want an error saying %q", c.args, err, c.msg)
		}
	}
	if entries, _ := os.ReadDir(unitDir); len(entries) != 0 {
		t.Fatalf("a refused install wrote %d files", len(entries))
	}
	if _, err := runCmd("serve", "--service", "oncegate"); err == nil || !strings.Contains(err.Error(), "Windows service manager") {
		t.Fatalf("serve --service on Linux: %v", err)
	}
}

func TestHiddenPaths(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]bool{
		"/home":             true,
		"/home/me/x":        true,
		"/homestead/x":      false,
		"/tmp/x":            true,
		"/var/tmp":          true,
		"/var/lib/oncegate": false,
		"/root/x":           true,
		"/srv/oncegate":     false,
	} {
		got := false
		for _, dir := range hiddenFromService {
			got = got || under(path, dir)
		}
		if got != want {
			t.Errorf("%s hidden: got %v, want %v", path, got, want)
		}
	}
}
