package engine

// TestSignals are the events the background workers report, so that
// tests wait for what they wait for instead of polling the journal. They
// are only initialised in tests (InitTestSignals); in production every
// channel is nil and sending on it does nothing.
type TestSignals struct {
	// Reconciled: the reconciler looked an operation up and settled what
	// the answer told, by key.
	Reconciled TestSignal[string]
	// Executed: the executor drove an approved operation, by key.
	Executed TestSignal[string]
	// Expired: the executor ended an approval whose time ran out, by key.
	Expired TestSignal[string]
	// Purged: retention finished a pass over one target system.
	Purged TestSignal[Purge]
}

// Purge is one pass of retention over a target system's operations.
type Purge struct {
	System string
	Count  int // terminal operations deleted
}

// InitTestSignals makes the workers report their events on the returned
// channels. It is meant for tests, called before Run.
func (e *Engine) InitTestSignals() *TestSignals {
	e.signals.Reconciled.init()
	e.signals.Executed.init()
	e.signals.Expired.init()
	e.signals.Purged.init()
	return &e.signals
}

// TestSignal is one kind of worker event, as a channel a test receives
// from; nil outside tests.
type TestSignal[T any] chan T

// testSignalBuffer is how many events of one kind wait for a test before
// further ones are dropped: a worker never waits for a test.
const testSignalBuffer = 1024

func (s *TestSignal[T]) init() { *s = make(chan T, testSignalBuffer) }

// signal reports an event, if anyone listens, without ever blocking.
func (s TestSignal[T]) signal(v T) {
	if s == nil {
		return
	}
	select {
	case s <- v:
	default:
	}
}
