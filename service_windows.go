package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/eventlog"
	"golang.org/x/sys/windows/svc/mgr"
)

// platformServiceManager is the Windows service manager; unitDir is
// systemd's and not used here.
func platformServiceManager(unitDir string) (serviceManager, error) {
	return windowsManager{}, nil
}

// windowsManager installs oncegate as a Windows service running as
// LocalSystem, with an event log source of the service's name.
type windowsManager struct{}

const serviceDescription = "oncegate: the gateway between AI agents and business systems (one business intent, one effect)"

func (windowsManager) install(inv invocation, spec serviceSpec) error {
	if spec.User != "" {
		return badUsage("service install", "--user is for systemd; the Windows service runs as LocalSystem")
	}
	m, err := mgr.Connect()
	if err != nil {
		return fmt.Errorf("service install: the service manager (run as administrator): %w", err)
	}
	defer m.Disconnect()

	start := uint32(mgr.StartAutomatic)
	if spec.NoEnable {
		start = mgr.StartManual
	}
	conf := mgr.Config{StartType: start, DisplayName: spec.Name, Description: serviceDescription}
	args := spec.serveArgs(true)
	s, err := m.OpenService(spec.Name)
	replaced := err == nil
	switch {
	case replaced && !spec.Force:
		s.Close()
		return fmt.Errorf("service install: service %s is installed: 'oncegate service uninstall --name %s' first, or say --force to replace it; nothing was changed", spec.Name, spec.Name)
	case replaced:
		// CreateService's command line, made the same way.
		conf.ServiceType = windows.SERVICE_WIN32_OWN_PROCESS
		conf.ErrorControl = mgr.ErrorNormal
		conf.BinaryPathName = windows.EscapeArg(spec.Exe)
		for _, a := range args {
			conf.BinaryPathName += " " + windows.EscapeArg(a)
		}
		if err := s.UpdateConfig(conf); err != nil {
			s.Close()
			return fmt.Errorf("service install: update %s: %w", spec.Name, err)
		}
	default:
		s, err = m.CreateService(spec.Name, spec.Exe, conf, args...)
		if err != nil {
			return fmt.Errorf("service install: %w", err)
		}
	}
	defer s.Close()

	// Restart on failure, as systemd's Restart=on-failure: a crash or a
	// non-zero exit is restarted after 5 s; the count resets after a day.
	restart := mgr.RecoveryAction{Type: mgr.ServiceRestart, Delay: 5 * time.Second}
	if err := s.SetRecoveryActions([]mgr.RecoveryAction{restart, restart, restart}, 24*60*60); err != nil {
		return fmt.Errorf("service install: recovery actions: %w", err)
	}
	if err := s.SetRecoveryActionsOnNonCrashFailures(true); err != nil {
		return fmt.Errorf("service install: recovery actions: %w", err)
	}
	if replaced {
		eventlog.Remove(spec.Name)
	}
	if err := eventlog.InstallAsEventCreate(spec.Name, eventlog.Error|eventlog.Warning|eventlog.Info); err != nil {
		return fmt.Errorf("service install: event log source: %w", err)
	}
	fmt.Fprintf(inv.stdout, "installed service %s: %s\n", spec.Name, spec.Exe)
	if spec.NoEnable {
		fmt.Fprintf(inv.stdout, "start type manual, not started; start it with 'oncegate service start --name %s'\n", spec.Name)
		return nil
	}
	if replaced {
		if err := stopService(s, spec.Name); err != nil {
			return err
		}
	}
	if err := startService(inv, s, spec.Name); err != nil {
		return err
	}
	fmt.Fprintf(inv.stdout, "logs: the Application event log (source %s) and %s\n", spec.Name, filepath.Join(spec.Data, serviceLogFile))
	return nil
}

func (windowsManager) uninstall(inv invocation, name string) error {
	m, err := mgr.Connect()
	if err != nil {
		return fmt.Errorf("service uninstall: the service manager (run as administrator): %w", err)
	}
	defer m.Disconnect()
	s, err := m.OpenService(name)
	if err != nil {
		return fmt.Errorf("service uninstall: service %s: %w", name, err)
	}
	defer s.Close()
	if err := stopService(s, name); err != nil {
		return err
	}
	if err := s.Delete(); err != nil {
		return fmt.Errorf("service uninstall: %w", err)
	}
	if err := eventlog.Remove(name); err != nil {
		fmt.Fprintf(inv.stderr, "warning: event log source %s: %v\n", name, err)
	}
	fmt.Fprintf(inv.stdout, "removed service %s; the data directory and its journal are left as they were\n", name)
	return nil
}

func (windowsManager) control(inv invocation, name, action string) error {
	m, err := mgr.Connect()
	if err != nil {
		return fmt.Errorf("service %s: the service manager: %w", action, err)
	}
	defer m.Disconnect()
	s, err := m.OpenService(name)
	if err != nil {
		return fmt.Errorf("service %s: service %s: %w", action, name, err)
	}
	defer s.Close()
	switch action {
	case "start":
		return startService(inv, s, name)
	case "stop":
		if err := stopService(s, name); err != nil {
			return err
		}
		fmt.Fprintf(inv.stdout, "%s stopped\n", name)
		return nil
	}
	st, err := s.Query()
	if err != nil {
		return fmt.Errorf("service status: %w", err)
	}
	conf, _ := s.Config()
	state := fromWindowsState(st.State)
	fmt.Fprintf(inv.stdout, "%s: %s", name, state)
	if st.ProcessId != 0 {
		fmt.Fprintf(inv.stdout, " (pid %d)", st.ProcessId)
	}
	fmt.Fprintf(inv.stdout, "\n  %s\n", conf.BinaryPathName)
	if state != svcRunning {
		return fmt.Errorf("service %s is %s", name, state)
	}
	return nil
}

// startService starts s and waits until it runs, or stops having failed.
func startService(inv invocation, s *mgr.Service, name string) error {
	if err := s.Start(); err != nil {
		return fmt.Errorf("service start %s: %w", name, err)
	}
	st, err := waitService(s, svcRunning, startWait)
	if err != nil {
		return err
	}
	if st.State != svc.Running {
		return fmt.Errorf("service %s did not start (%s): see the Application event log, source %s", name, fromWindowsState(st.State), name)
	}
	fmt.Fprintf(inv.stdout, "%s is running\n", name)
	return nil
}

// stopService asks s to stop, if it runs, and waits until it has.
func stopService(s *mgr.Service, name string) error {
	st, err := s.Query()
	if err != nil {
		return fmt.Errorf("service %s: %w", name, err)
	}
	if st.State == svc.Stopped {
		return nil
	}
	if _, err := s.Control(svc.Stop); err != nil && !errors.Is(err, windows.ERROR_SERVICE_NOT_ACTIVE) {
		return fmt.Errorf("service stop %s: %w", name, err)
	}
	st, err = waitService(s, svcStopped, stopWait+10*time.Second)
	if err != nil {
		return err
	}
	if st.State != svc.Stopped {
		return fmt.Errorf("service %s is still %s", name, fromWindowsState(st.State))
	}
	return nil
}

// waitService polls s until it is in state want, or stopped, or until
// timeout.
func waitService(s *mgr.Service, want svcState, timeout time.Duration) (svc.Status, error) {
	deadline := time.Now().Add(timeout)
	for {
		st, err := s.Query()
		if err != nil {
			return st, err
		}
		if got := fromWindowsState(st.State); got == want || got == svcStopped || time.Now().After(deadline) {
			return st, nil
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// windowsStates pairs the service states with Windows's.
var windowsStates = []struct {
	ours   svcState
	theirs svc.State
}{
	{svcStartPending, svc.StartPending}, {svcRunning, svc.Running},
	{svcStopPending, svc.StopPending}, {svcStopped, svc.Stopped},
}

func fromWindowsState(s svc.State) svcState {
	for _, p := range windowsStates {
		if p.theirs == s {
			return p.ours
		}
	}
	return 0
}

func toWindowsStatus(st svcStatus) svc.Status {
	out := svc.Status{WaitHint: uint32(st.WaitHint / time.Millisecond)}
	for _, p := range windowsStates {
		if p.ours == st.State {
			out.State = p.theirs
		}
	}
	if st.State == svcStopped {
		out.ServiceSpecificExitCode = st.ExitCode
	}
	if st.AcceptsStop {
		out.Accepts = svc.AcceptStop | svc.AcceptShutdown
	}
	return out
}

func fromWindowsCmd(c svc.Cmd) svcCmd {
	switch c {
	case svc.Interrogate:
		return svcInterrogate
	case svc.Stop:
		return svcStop
	case svc.Shutdown:
		return svcShutdown
	}
	return svcOther
}

// serviceLogFile is serve's log in the data directory when it runs as a
// Windows service.
const serviceLogFile = "oncegate.log"

// winHandler is the svc.Handler of serve.
type winHandler struct {
	run  func(ctx context.Context, notify func(string)) error
	elog *eventlog.Log
	err  error
}

func (h *winHandler) Execute(args []string, r <-chan svc.ChangeRequest, s chan<- svc.Status) (bool, uint32) {
	requests := make(chan svcCmd)
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case c := <-r:
				select {
				case requests <- fromWindowsCmd(c.Cmd):
				case <-done:
					return
				}
			case <-done:
				return
			}
		}
	}()
	var exit uint32
	h.err = serviceHandler(requests, func(st svcStatus) {
		if st.State == svcStopped {
			// svc reports Stopped, with this exit code, once Execute returns.
			exit = st.ExitCode
			return
		}
		s <- toWindowsStatus(st)
	}, h.run)
	return exit != 0, exit
}

// serveService is serve under the Windows service manager as service
// name, run as the serve command gives it: its log goes to oncegate.log
// in the data directory, and its start, stop and failure to the event
// log. The service manager's stop and the system's shutdown stop it as
// SIGTERM does.
func serveService(name string, c configFlags, env func(string) string, run serveRun) error {
	isService, err := svc.IsWindowsService()
	if err != nil {
		return fmt.Errorf("serve --service: %w", err)
	}
	if !isService {
		return errors.New("serve: --service is set by 'oncegate service install' for the Windows service manager; start the service with 'oncegate service start'")
	}
	elog, err := eventlog.Open(name)
	if err != nil {
		return fmt.Errorf("serve: event log source %s: %w", name, err)
	}
	defer elog.Close()
	fail := func(err error) error {
		elog.Error(1, "oncegate failed: "+err.Error())
		return err
	}
	cfg, err := c.load(env)
	if err != nil {
		return fail(err)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fail(fmt.Errorf("data directory: %w", err))
	}
	logPath := filepath.Join(cfg.DataDir, serviceLogFile)
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fail(fmt.Errorf("log file: %w", err))
	}
	defer logFile.Close()

	h := &winHandler{elog: elog, run: func(ctx context.Context, notify func(string)) error {
		return run(ctx, logFile, logFile, func(state string) {
			switch state {
			case "READY=1":
				elog.Info(1, "oncegate is serving; its log: "+logPath)
			case "STOPPING=1":
				elog.Info(2, "oncegate is stopping: operations in flight finish first")
			}
			notify(state)
		})
	}}
	if err := svc.Run(name, h); err != nil {
		return fail(fmt.Errorf("serve: service manager: %w", err))
	}
	if h.err != nil {
		return fail(h.err)
	}
	elog.Info(3, "oncegate stopped")
	return nil
}
