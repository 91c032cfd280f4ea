package main

import (
	"context"
	"errors"
	"testing"
	"time"
)

// handlerRig drives serviceHandler as the Windows service manager would:
// requests in, statuses out.
type handlerRig struct {
	requests chan svcCmd
	statuses chan svcStatus
	done     chan error
}

// startHandler runs serviceHandler with run as serve.
func startHandler(t *testing.T, run func(ctx context.Context, notify func(string)) error) *handlerRig {
	t.Helper()
	h := &handlerRig{requests: make(chan svcCmd), statuses: make(chan svcStatus, 16), done: make(chan error, 1)}
	go func() { h.done <- serviceHandler(h.requests, func(st svcStatus) { h.statuses <- st }, run) }()
	return h
}

func (h *handlerRig) expect(t *testing.T, want svcState) svcStatus {
	t.Helper()
	select {
	case st := <-h.statuses:
		if st.State != want {
			t.Fatalf("reported %v, want %v", st.State, want)
		}
		return st
	case <-time.After(10 * time.Second):
		t.Fatalf("no %v reported", want)
	}
	return svcStatus{}
}

func (h *handlerRig) send(t *testing.T, cmd svcCmd) {
	t.Helper()
	select {
	case h.requests <- cmd:
	case <-time.After(10 * time.Second):
		t.Fatalf("the handler does not take request %v", cmd)
	}
}

// fakeServe is serve as runServe behaves: ready once it listens, then
// stopping when its context is done, returning err.
func fakeServe(ctxDone chan<- struct{}, err error) func(ctx context.Context, notify func(string)) error {
	return func(ctx context.Context, notify func(string)) error {
		notify("READY=1")
		stopping := context.AfterFunc(ctx, func() { notify("STOPPING=1") })
		defer stopping()
		<-ctx.Done()
		close(ctxDone)
		return err
	}
}

func TestServiceHandler(t *testing.T) {
	t.Parallel()
	for _, cmd := range []svcCmd{svcStop, svcShutdown} {
		t.Run(map[svcCmd]string{svcStop: "Stop", svcShutdown: "Shutdown"}[cmd], func(t *testing.T) {
			t.Parallel()
			cancelled := make(chan struct{})
			h := startHandler(t, fakeServe(cancelled, nil))
			if st := h.expect(t, svcStartPending); st.AcceptsStop {
				t.Fatal("a starting service accepts stop")
			}
			if st := h.expect(t, svcRunning); !st.AcceptsStop {
				t.Fatal("a running service does not accept stop")
			}
			h.send(t, svcInterrogate)
			h.expect(t, svcRunning)
			h.send(t, svcOther) // ignored
			h.send(t, cmd)
			if st := h.expect(t, svcStopPending); st.WaitHint < 150*time.Second {
				t.Fatalf("stop pending with a wait hint of %v, less than serve's stop may take", st.WaitHint)
			}
			select {
			case <-cancelled:
			case <-time.After(10 * time.Second):
				t.Fatal("stop did not cancel serve's context")
			}
			if st := h.expect(t, svcStopped); st.ExitCode != 0 {
				t.Fatalf("stopped with exit code %d after a clean stop", st.ExitCode)
			}
			if err := <-h.done; err != nil {
				t.Fatal(err)
			}
			select {
			case st := <-h.statuses:
				t.Fatalf("reported %v after stopped", st.State)
			default:
			}
		})
	}
	t.Run("ServeFails", func(t *testing.T) {
		t.Parallel()
		failure := errors.New("listen: address in use")
		h := startHandler(t, func(ctx context.Context, notify func(string)) error { return failure })
		h.expect(t, svcStartPending)
		if st := h.expect(t, svcStopped); st.ExitCode != 1 {
			t.Fatalf("a failed serve stopped with exit code %d, want 1", st.ExitCode)
		}
		if err := <-h.done; !errors.Is(err, failure) {
			t.Fatalf("handler returned %v, want serve's error", err)
		}
	})
	t.Run("LateReady", func(t *testing.T) {
		t.Parallel()
		// A stop while serve still starts; its READY=1 arrives after, and
		// must not report the service running again.
		proceed := make(chan struct{})
		h := startHandler(t, func(ctx context.Context, notify func(string)) error {
			<-proceed
			notify("READY=1")
			<-ctx.Done()
			return nil
		})
		h.expect(t, svcStartPending)
		h.send(t, svcShutdown)
		h.expect(t, svcStopPending)
		close(proceed)
		h.expect(t, svcStopped)
		if err := <-h.done; err != nil {
			t.Fatal(err)
		}
	})
}

func TestServiceAction(t *testing.T) {
	t.Parallel()
	for cmd, want := range map[svcCmd]svcAction{svcInterrogate: actReport, svcStop: actStop, svcShutdown: actStop, svcOther: actIgnore} {
		if got := serviceAction(cmd); got != want {
			t.Errorf("serviceAction(%v) = %v, want %v", cmd, got, want)
		}
	}
}

func TestServeArgs(t *testing.T) {
	t.Parallel()
	spec := serviceSpec{Name: "oncegate", Config: `C:\ProgramData\oncegate\config.yaml`, Data: `C:\ProgramData\oncegate\data`, EnvFile: `C:\ProgramData\oncegate\secrets.env`}
	got := spec.serveArgs(true)
	want := []string{"serve", "--config", spec.Config, "--data", spec.Data, "--env-file", spec.EnvFile, "--service", "oncegate"}
	if len(got) != len(want) {
		t.Fatalf("Windows serve args %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Windows serve args %q, want %q", got, want)
		}
	}
	if got := spec.serveArgs(false); len(got) != 5 {
		t.Fatalf("systemd serve args %q: the env file is systemd's to read", got)
	}
}
