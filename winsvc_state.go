package main

import (
	"context"
	"sync"
	"time"
)

// The Windows service's state machine: the requests of the service
// manager, the states the service reports, and the handler that walks
// between them. It is written against these small types rather than the
// svc package's (which builds on Windows only), so that a test on any
// system drives it; service_windows.go maps svc.ChangeRequest and
// svc.Status onto them.

// svcCmd is a request of the service manager.
type svcCmd int

const (
	svcInterrogate svcCmd = iota // report the current status
	svcStop                      // the service is asked to stop
	svcShutdown                  // the system shuts down
	svcOther                     // anything else, which the service does not accept
)

// svcState is a state the service reports.
type svcState int

const (
	svcStartPending svcState = iota + 1
	svcRunning
	svcStopPending
	svcStopped
)

func (s svcState) String() string {
	switch s {
	case svcStartPending:
		return "start pending"
	case svcRunning:
		return "running"
	case svcStopPending:
		return "stop pending"
	case svcStopped:
		return "stopped"
	}
	return "unknown"
}

// svcStatus is what the service reports to the service manager.
type svcStatus struct {
	State svcState
	// AcceptsStop is true once the service takes stop and shutdown
	// requests: while it runs.
	AcceptsStop bool
	// WaitHint is how long the pending state may last.
	WaitHint time.Duration
	// ExitCode is the service's own exit code once stopped: 1 if serve
	// failed.
	ExitCode uint32
}

// svcAction is what the handler does on a request.
type svcAction int

const (
	actReport svcAction = iota // report the current status again
	actStop                    // cancel serve's context, as SIGTERM does
	actIgnore
)

// serviceAction maps a request of the service manager to what the handler
// does. Stop and shutdown both stop serve as SIGTERM does: operations in
// flight finish, or stay started under their lease for the next run.
func serviceAction(cmd svcCmd) svcAction {
	switch cmd {
	case svcInterrogate:
		return actReport
	case svcStop, svcShutdown:
		return actStop
	}
	return actIgnore
}

// startWait and stopWait are the wait hints of the pending states: serve
// may migrate the journal before it listens, and waits for the drives in
// flight before it stops (see stopTimeoutSec).
const (
	startWait = 60 * time.Second
	stopWait  = stopTimeoutSec * time.Second
)

// serviceHandler runs serve as a service: run is serve until its context
// is done, calling notify with "READY=1" once it listens and "STOPPING=1"
// when it begins to stop. It reports StartPending, Running once serve
// listens, StopPending on a stop or shutdown request (which cancels run's
// context) or when serve stops by itself, and Stopped when run returns,
// whose error it returns.
func serviceHandler(requests <-chan svcCmd, report func(svcStatus), run func(ctx context.Context, notify func(string)) error) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var mu sync.Mutex
	current := svcStatus{State: svcStartPending, WaitHint: startWait}
	// set reports a new state once; it never goes back from stopping to
	// running, so a late READY=1 cannot undo a stop request.
	set := func(st svcStatus) {
		mu.Lock()
		defer mu.Unlock()
		if st.State == current.State || current.State >= svcStopPending && st.State < current.State {
			return
		}
		current = st
		report(st)
	}
	mu.Lock()
	report(current)
	mu.Unlock()

	notify := func(state string) {
		switch state {
		case "READY=1":
			set(svcStatus{State: svcRunning, AcceptsStop: true})
		case "STOPPING=1":
			set(svcStatus{State: svcStopPending, WaitHint: stopWait})
		}
	}
	done := make(chan error, 1)
	go func() { done <- run(ctx, notify) }()

	for {
		select {
		case err := <-done:
			st := svcStatus{State: svcStopped}
			if err != nil {
				st.ExitCode = 1
			}
			set(st)
			return err
		case cmd, ok := <-requests:
			if !ok {
				requests = nil // no more requests; wait for serve
				continue
			}
			switch serviceAction(cmd) {
			case actReport:
				mu.Lock()
				report(current)
				mu.Unlock()
			case actStop:
				set(svcStatus{State: svcStopPending, WaitHint: stopWait})
				cancel()
			}
		}
	}
}
