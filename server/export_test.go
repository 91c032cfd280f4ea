package server

import "github.com/oncegate/oncegate/server/engine"

// InitTestSignals makes the gateway's workers report their events to the
// test, before Serve starts them.
func (s *Server) InitTestSignals() *engine.TestSignals { return s.engine.InitTestSignals() }
