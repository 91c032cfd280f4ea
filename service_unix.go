//go:build !windows

package main

import (
	"errors"
	"runtime"
)

// platformServiceManager is systemd on Linux; other unix systems have
// neither of the service managers oncegate installs itself in.
func platformServiceManager(unitDir string) (serviceManager, error) {
	if runtime.GOOS != "linux" {
		return nil, errNoServiceManager
	}
	return newSystemd(unitDir), nil
}

// serveService is serve under the Windows service manager, which is not
// here.
func serveService(name string, c configFlags, env func(string) string, run serveRun) error {
	return errors.New("serve: --service is for the Windows service manager (service install sets it); under systemd, serve runs as it is")
}
