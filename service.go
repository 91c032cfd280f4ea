package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
)

// The seam between oncegate and the service managers of the operating
// systems: a systemd unit on Linux (service_systemd.go), a Windows service
// on Windows (service_windows.go), platformServiceManager choosing
// (service_unix.go, service_windows.go). What both share, the command
// lines and the install spec, is here and platform-neutral.

// A serviceManager installs, removes and controls oncegate as a service
// of the operating system. There are two: systemd and Windows'.
type serviceManager interface {
	install(inv invocation, spec serviceSpec) error
	uninstall(inv invocation, name string) error
	// control starts, stops or shows the service: action is "start",
	// "stop" or "status".
	control(inv invocation, name, action string) error
}

// serviceSpec is what service install installs: every path absolute and
// checked, the configuration loaded.
type serviceSpec struct {
	Name    string
	Exe     string // the oncegate binary, symlinks resolved
	Config  string
	Data    string
	EnvFile string // "" for none
	User    string // the user to run as; "" for the platform's default
	Listen  string // the configuration's listen address
	// NoEnable installs without enabling or starting.
	NoEnable bool
	// Force replaces an installed service of the same name.
	Force bool
}

// serveArgs is the serve command line the service runs, after the binary.
// On Windows serve reads the env file itself and is told its service name;
// systemd reads the env file (EnvironmentFile=) and needs neither.
func (s serviceSpec) serveArgs(windows bool) []string {
	args := []string{"serve", "--config", s.Config, "--data", s.Data}
	if windows {
		if s.EnvFile != "" {
			args = append(args, "--env-file", s.EnvFile)
		}
		args = append(args, "--service", s.Name)
	}
	return args
}

// defaultServiceName is the service's name when --name gives none, and
// the user a systemd unit runs as when none is given or made.
const defaultServiceName = "oncegate"

// listenPort is the port of a listen address, 0 if it has none.
func listenPort(addr string) int {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return 0
	}
	var n int
	fmt.Sscan(port, &n)
	return n
}

// serveRun is serve's run as a service manager drives it, until ctx is
// done: its log on stdout and stderr, telling notify how the run goes
// ("READY=1", "STOPPING=1"). The serve command gives it (runServe).
type serveRun func(ctx context.Context, stdout, stderr io.Writer, notify func(state string)) error

// errNoServiceManager is the answer on a system with neither systemd nor
// Windows' service manager.
var errNoServiceManager = errors.New("service: oncegate installs itself as a systemd unit (Linux) or a Windows service only; on this system run oncegate serve under its own supervisor")

// sdNotify tells systemd how the run goes (the sd_notify protocol: one
// datagram to $NOTIFY_SOCKET), for a unit of Type=notify: "READY=1" once
// the gateway listens, "STOPPING=1" when it begins to stop. Without
// $NOTIFY_SOCKET (a terminal, Windows) it does nothing.
func sdNotify(state string) {
	sock := os.Getenv("NOTIFY_SOCKET")
	if sock == "" {
		return
	}
	// Go reads a leading "@" as Linux's abstract namespace, as systemd means it.
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		return
	}
	defer conn.Close()
	conn.Write([]byte(state))
}
